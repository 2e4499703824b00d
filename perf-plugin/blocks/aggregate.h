// The block model every source produces: an aggregate is a (key, value) bucket of blocks
// with the same thread, stacks and waker (struct offwake_key / offwake_value, shared with the
// BPF programs in offwake.h). The BPF programs (bpf/) and the tracepoint pairer (sched/) make
// them; samples/ turns them into perf samples. Nothing here needs libbpf or libperf.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "callchain/stack_ids.h"
#include "offwake.h"
#include "util/result.h"

namespace offwake {

static_assert(OFFWAKE_NO_STACK == kNoStack, "the BPF side and the callchain side disagree");

struct Aggregate {
  offwake_key key;
  offwake_value value;
};

// A consumer of aggregates, a batch at a time.
using AggregateBatchFn = std::function<Status(std::span<const Aggregate>)>;

// The stack ids of a key, in the form CallchainBuilder takes.
inline StackIds blocked_stacks(const offwake_key& k) { return {k.kern_stack_id, k.user_stack_id}; }
inline StackIds waker_stacks(const offwake_key& k) {
  return {k.waker_kern_stack_id, k.waker_user_stack_id};
}

// "comm" of a key as a string (the kernel zero-pads it, but need not zero-terminate it).
std::string comm_string(const char (&comm)[OFFWAKE_COMM_LEN]);

// Total stack losses over both halves, and over all causes.
uint64_t total_stack_losses(const offwake_counters& c);

}  // namespace offwake
