// The perf side of a recording, through libperf, on every CPU:
// - a dummy software event that makes the kernel report COMM, MMAP2 (with build ids), FORK and
//   EXIT of every task while we record (and CGROUP, NAMESPACES), so that every stack symbolizes, including those of
//   processes gone by report time;
// - optionally (--on-cpu) a sampling event with callchains: its samples are decoded into the
//   same SampleRecord/Callchain types as the BPF stacks and written by the same encoder.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "perfdata/records.h"
#include "tracking/perf_event_set.h"
#include "util/result.h"

namespace offwake {

// What --on-cpu samples: an event (cpu-clock by default) by frequency or by period.
struct SamplingConfig {
  std::string name = "cpu-clock";  // as perf names it; see parse_sampling_event()
  uint32_t type = PERF_TYPE_SOFTWARE;
  uint64_t config = PERF_COUNT_SW_CPU_CLOCK;
  bool use_frequency = true;
  uint64_t frequency = 4000;  // Hz, with use_frequency
  uint64_t period = 0;        // events per sample, without
  uint16_t max_stack = 127;
  // --call-graph dwarf,SIZE: each sample also copies the user registers and SIZE bytes of user
  // stack (the kernel's user callchain left out), for the recorder to unwind; 0: none.
  uint32_t user_stack_copy = 0;
};

// "cpu-clock", "task-clock", "cycles", "instructions", ... into type/config.
Status parse_sampling_event(const std::string& name, SamplingConfig& out);

// kernel.perf_event_max_sample_rate: the highest frequency a sampling event may ask for (the
// kernel lowers it when sampling interrupts take too long).
Result<uint64_t> perf_event_max_sample_rate();

class TrackingEvents {
 public:
  // Opens and mmaps the tracking event (and the sampling event, if any) on every online
  // CPU; not enabled yet. The tracking event reports cgroups as they are made, and with
  // `namespaces` (record --namespaces) the namespaces of new tasks.
  static Result<TrackingEvents> open(const SamplingConfig* sampling = nullptr, unsigned mmap_pages = 128,
                                     bool namespaces = false);

  void enable() { set_.enable(); }
  void disable() { set_.disable(); }

  // The events as they go into perf.data: attr, name and the kernel's sample ids. The
  // tracking event is first.
  const std::vector<perfdata::EventDesc>& events() const { return set_.events(); }

  // Waits up to timeout_ms for data.
  void poll(int timeout_ms) { set_.poll(timeout_ms); }
  // Hands every record in the ring buffers to `emit`, decoded (samples with their
  // Callchain). Counts what could not be decoded in undecodable(); the kernel's own losses
  // arrive as LOST records and are passed on.
  Status drain(const std::function<Status(const perfdata::Record&)>& emit);
  uint64_t undecodable() const { return set_.undecodable(); }

 private:
  explicit TrackingEvents(PerfEventSet set) : set_(std::move(set)) {}
  PerfEventSet set_;
};

}  // namespace offwake
