// Reads what the kernel side aggregated: the (key, value) buckets and the loss counters.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "callchain/stack_ids.h"
#include "offwake.h"
#include "util/result.h"

namespace offwake::bpf {

static_assert(OFFWAKE_NO_STACK == kNoStack, "the BPF side and the callchain side disagree");

struct Aggregate {
  offwake_key key;
  offwake_value value;
};

// Every bucket of the aggregation map, left in place.
Result<std::vector<Aggregate>> read_aggregates(int map_fd);

// The same, a batch at a time, without holding them all: `fn` gets each batch.
using AggregateBatchFn = std::function<Status(std::span<const Aggregate>)>;
Status visit_aggregates(int map_fd, const AggregateBatchFn& fn);

// Every bucket, each deleted as it is read (atomically per hash bucket), so that a long
// recording can drain the map while the programs keep adding. Use read_aggregates() after
// detaching to avoid losing an add that races with the delete.
Result<std::vector<Aggregate>> drain_aggregates(int map_fd);

// The per-CPU counters of the `counters` map, summed over all possible CPUs.
Result<offwake_counters> read_counters(int map_fd);

// The stack ids of a key, in the form CallchainBuilder takes.
inline StackIds blocked_stacks(const offwake_key& k) { return {k.kern_stack_id, k.user_stack_id}; }
inline StackIds waker_stacks(const offwake_key& k) {
  return {k.waker_kern_stack_id, k.waker_user_stack_id};
}

// "comm" of a key as a string (the kernel zero-pads it, but need not zero-terminate it).
std::string comm_string(const char (&comm)[OFFWAKE_COMM_LEN]);

// Total stack losses over both halves, and over all causes.
uint64_t total_stack_losses(const offwake_counters& c);

}  // namespace offwake::bpf
