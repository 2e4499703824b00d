// The perf side of a recording, through libperf: a dummy software event on every CPU that
// makes the kernel report COMM, MMAP2 (with build ids), FORK and EXIT of every task while
// we record, so that every stack symbolizes, including those of processes gone by report time.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "perfdata/records.h"
#include "util/result.h"

struct perf_evlist;
struct perf_cpu_map;
struct perf_thread_map;

namespace offwake {

// The sample_id layout every event of our files shares (non-sample records carry one trailer).
constexpr uint64_t kSampleIdLayout =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;

class TrackingEvents {
 public:
  // Opens and mmaps the tracking event on every online CPU; not enabled yet.
  static Result<TrackingEvents> open(unsigned mmap_pages = 64);

  TrackingEvents(TrackingEvents&&) noexcept;
  TrackingEvents& operator=(TrackingEvents&&) noexcept;
  ~TrackingEvents();

  void enable();
  void disable();

  // The event as it goes into perf.data: attr, name and the kernel's sample ids.
  const perfdata::EventDesc& event() const { return event_; }

  // Waits up to timeout_ms for data.
  void poll(int timeout_ms);
  // Hands every record in the ring buffers to `emit`, decoded. Counts what could not be
  // decoded in undecodable().
  Status drain(const std::function<Status(const perfdata::Record&)>& emit);
  uint64_t undecodable() const { return undecodable_; }

 private:
  struct EvlistDeleter {
    void operator()(perf_evlist* e) const;
  };
  struct CpusDeleter {
    void operator()(perf_cpu_map* c) const;
  };
  struct ThreadsDeleter {
    void operator()(perf_thread_map* t) const;
  };
  TrackingEvents() = default;

  // Declared in reverse order of teardown: the evlist goes before the maps it uses.
  std::unique_ptr<perf_cpu_map, CpusDeleter> cpus_;
  std::unique_ptr<perf_thread_map, ThreadsDeleter> threads_;
  std::unique_ptr<perf_evlist, EvlistDeleter> evlist_;
  perfdata::EventDesc event_;
  uint64_t undecodable_ = 0;
};

// CLOCK_MONOTONIC in nanoseconds: the clock of every timestamp in our files.
uint64_t monotonic_ns();

}  // namespace offwake
