// Where a BPF aggregate becomes perf samples: stack ids go through CallchainBuilder into the
// one Callchain type, and out as an offwake-time sample, its offwake-waker sample, and with a
// wakeup chain an offwake-hop-blocked and an offwake-hop-waker sample per further hop.
#pragma once

#include <vector>

#include "blocks/aggregate.h"
#include "callchain/stack_ids.h"
#include "perfdata/records.h"
#include "samples/offwake_events.h"
#include "blocks/pseudo_wakers.h"
#include "synth/kernel_maps.h"

namespace offwake {

// The time an aggregate's samples are stamped with: its last_ns (a time both threads had the
// key's identity), or `fallback_time` without one.
inline uint64_t aggregate_time(const Aggregate& a, uint64_t fallback_time) {
  return a.value.last_ns ? a.value.last_ns : fallback_time;
}

class AggregateSamples {
 public:
  // With `kallsyms`, leaf kernel frames of the tracing machinery that reaches the BPF program
  // (__traceiter_*, bpf_trace_run*) are dropped: how many there are varies from one unwind to
  // the next, and they would split one blocking stack into several.
  // `sample_period_ns`: the recording's --sample-period (0: none), for the raw payload and
  // the weight of a --timeline block shorter than it.
  AggregateSamples(const StackTraceSource& stacks, OffwakeEventIds ids, const Kallsyms* kallsyms = nullptr,
                   uint64_t sample_period_ns = 0)
      : builder_(stacks), ids_(ids), kallsyms_(kallsyms), sample_period_ns_(sample_period_ns) {}

  // The blocked sample, the waker sample, then the hop samples of one aggregate, stamped
  // aggregate_time(). Hop samples only when the event ids have hop events.
  std::vector<perfdata::SampleRecord> convert(const Aggregate& a, uint64_t fallback_time);
  // The same for one block of --timeline: stamped with its wakeup (or its start without one),
  // on the CPU where it ended.
  std::vector<perfdata::SampleRecord> convert(const offwake_event& e);

  // Stacks that could not be had, per half, over blocked and waker stacks alike.
  const StackLosses& kernel_losses() const { return builder_.kernel_losses(); }
  const StackLosses& user_losses() const { return builder_.user_losses(); }
  // Stack halves the samples asked for (kernel and user, blocked and waker; not kNoStack).
  uint64_t sample_stacks() const { return sample_stacks_; }

 private:
  Callchain build(StackIds ids);
  perfdata::SampleRecord sample(uint64_t id, uint32_t pid, uint32_t tid, uint64_t time, uint64_t period,
                                StackIds stacks);
  // A waker's sample: interrupt and unknown wakers belong to a pseudo-thread.
  perfdata::SampleRecord waker_sample(uint64_t id, uint32_t flags, uint32_t tgid, uint32_t tid, uint64_t time,
                                      uint64_t period, StackIds stacks);

  CallchainBuilder builder_;
  OffwakeEventIds ids_;
  const Kallsyms* kallsyms_;
  uint64_t sample_period_ns_;
  uint64_t sample_stacks_ = 0;
};

}  // namespace offwake
