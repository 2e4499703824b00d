// A set of perf events opened through libperf on every online CPU, system-wide, with one
// ring buffer per CPU that all events of the set share: what the tracking events and the
// scheduler tracepoints (--backend tracepoint) both are. Records come out decoded, samples
// with their Callchain, into the same perfdata types the writer encodes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "perfdata/records.h"
#include "util/result.h"

struct perf_evlist;
struct perf_cpu_map;
struct perf_thread_map;

namespace offwake {

// What every event we open shares: the sample_id layout, ids readable, CLOCK_MONOTONIC
// timestamps, disabled until enable(), and ring buffers that wake a poll only when
// `wakeup_bytes` are waiting.
perf_event_attr base_perf_attr(uint32_t type, uint64_t config, uint32_t wakeup_bytes = 64 * 1024);

// As perf record --call-graph dwarf,SIZE asks for a user stack: each sample copies the user
// registers (kUserRegsMask) and SIZE bytes of user stack, and the kernel's callchain stops at
// the user boundary. No-op for a SIZE of 0.
void ask_user_stack_copy(perf_event_attr& a, uint32_t size);

// The same event as written to perf.data once its user stacks are unwound into its
// callchains (by the recorder): no copy, and the callchain no longer stops at the boundary.
void drop_user_stack_copy(perf_event_attr& a);

class PerfEventSet {
 public:
  // Opens `events` (attr and name; ids are filled in) on every online CPU and maps
  // `mmap_pages` pages of ring buffer per CPU. Not enabled yet. A failed perf_event_open
  // is an Error carrying its errno.
  static Result<PerfEventSet> open(std::vector<perfdata::EventDesc> events, unsigned mmap_pages);

  PerfEventSet(PerfEventSet&&) noexcept;
  PerfEventSet& operator=(PerfEventSet&&) noexcept;
  ~PerfEventSet();

  void enable();
  void disable();
  // Waits up to timeout_ms for a ring buffer to reach its wakeup mark.
  void poll(int timeout_ms);

  // The events as they go into perf.data: attr (enabled), name and the kernel's sample ids.
  const std::vector<perfdata::EventDesc>& events() const { return events_; }
  // The ring buffers, one per online CPU.
  size_t buffers() const { return buffers_; }

  // Hands every record waiting in the ring buffers to `emit`, buffer by buffer, each in
  // ring-buffer order, decoded: samples by the event their identifier names, other records
  // with the sample_id layout of the first event. Records that cannot be decoded are
  // counted in undecodable(). The kernel's LOST records are passed on.
  using EmitFn = std::function<Status(size_t buffer, const perfdata::Record&)>;
  Status drain(const EmitFn& emit);
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
  PerfEventSet() = default;
  const perfdata::EventDesc* event_of(std::span<const uint8_t> sample_payload) const;

  // Declared in reverse order of teardown: the evlist goes before the maps it uses.
  std::unique_ptr<perf_cpu_map, CpusDeleter> cpus_;
  std::unique_ptr<perf_thread_map, ThreadsDeleter> threads_;
  std::unique_ptr<perf_evlist, EvlistDeleter> evlist_;
  std::vector<perfdata::EventDesc> events_;
  size_t buffers_ = 0;
  uint64_t undecodable_ = 0;
};

// CLOCK_MONOTONIC in nanoseconds: the clock of every timestamp in our files.
uint64_t monotonic_ns();

}  // namespace offwake
