// Where a BPF aggregate becomes perf samples: stack ids go through CallchainBuilder into the
// one Callchain type, and out as an offwake-time sample and its offwake-waker sample.
#pragma once

#include <utility>

#include "bpf/aggregates.h"
#include "callchain/stack_ids.h"
#include "perfdata/records.h"
#include "record/offwake_events.h"

namespace offwake {

// Wakers that are not a thread get a thread of their own in perf.data, far above pid_max, with
// a COMM that says what they are, so that perf shows "[hardirq]" rather than a bystander.
struct PseudoWaker {
  uint32_t tid;
  const char* comm;
};
constexpr PseudoWaker kHardirqWaker{0x7ffffff0, "[hardirq]"};
constexpr PseudoWaker kSoftirqWaker{0x7ffffff1, "[softirq]"};
constexpr PseudoWaker kNmiWaker{0x7ffffff2, "[nmi]"};
constexpr PseudoWaker kUnknownWaker{0x7ffffff3, "[no waker seen]"};
constexpr PseudoWaker kPseudoWakers[] = {kHardirqWaker, kSoftirqWaker, kNmiWaker, kUnknownWaker};

// The pseudo-thread for a key's waker, or nullptr when the waker is a real thread.
const PseudoWaker* pseudo_waker(uint32_t waker_flags);

class AggregateSamples {
 public:
  AggregateSamples(const StackTraceSource& stacks, OffwakeEventIds ids) : builder_(stacks), ids_(ids) {}

  // The blocked sample then the waker sample of one aggregate, stamped with `time`.
  std::pair<perfdata::SampleRecord, perfdata::SampleRecord> convert(const bpf::Aggregate& a, uint64_t time);

  // Stacks that could not be had, per half, over blocked and waker stacks alike.
  const StackLosses& kernel_losses() const { return builder_.kernel_losses(); }
  const StackLosses& user_losses() const { return builder_.user_losses(); }

 private:
  CallchainBuilder builder_;
  OffwakeEventIds ids_;
};

}  // namespace offwake
