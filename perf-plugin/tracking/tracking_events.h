// The perf side of a recording, through libperf, on every CPU:
// - a dummy software event that makes the kernel report COMM, MMAP2 (with build ids), FORK and
//   EXIT of every task while we record, so that every stack symbolizes, including those of
//   processes gone by report time;
// - optionally (--on-cpu) a sampling event with callchains: its samples are decoded into the
//   same SampleRecord/Callchain types as the BPF stacks and written by the same encoder.
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

// What --on-cpu samples: an event (cpu-clock by default) by frequency or by period.
struct SamplingConfig {
  std::string name = "cpu-clock";  // as perf names it; see parse_sampling_event()
  uint32_t type = PERF_TYPE_SOFTWARE;
  uint64_t config = PERF_COUNT_SW_CPU_CLOCK;
  bool use_frequency = true;
  uint64_t frequency = 4000;  // Hz, with use_frequency
  uint64_t period = 0;        // events per sample, without
  uint16_t max_stack = 127;
};

// "cpu-clock", "task-clock", "cycles", "instructions", ... into type/config.
Status parse_sampling_event(const std::string& name, SamplingConfig& out);

class TrackingEvents {
 public:
  // Opens and mmaps the tracking event (and the sampling event, if any) on every online
  // CPU; not enabled yet.
  static Result<TrackingEvents> open(const SamplingConfig* sampling = nullptr, unsigned mmap_pages = 128);

  TrackingEvents(TrackingEvents&&) noexcept;
  TrackingEvents& operator=(TrackingEvents&&) noexcept;
  ~TrackingEvents();

  void enable();
  void disable();

  // The events as they go into perf.data: attr, name and the kernel's sample ids. The
  // tracking event is first.
  const std::vector<perfdata::EventDesc>& events() const { return events_; }

  // Waits up to timeout_ms for data.
  void poll(int timeout_ms);
  // Hands every record in the ring buffers to `emit`, decoded (samples with their
  // Callchain). Counts what could not be decoded in undecodable(); the kernel's own losses
  // arrive as LOST records and are passed on.
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
  std::vector<perfdata::EventDesc> events_;
  uint64_t undecodable_ = 0;
};

// CLOCK_MONOTONIC in nanoseconds: the clock of every timestamp in our files.
uint64_t monotonic_ns();

}  // namespace offwake
