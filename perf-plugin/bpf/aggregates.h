// Reads what the BPF programs aggregated: the (key, value) buckets and the loss counters.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "blocks/aggregate.h"
#include "util/result.h"

namespace offwake::bpf {


// Every bucket of the aggregation map, left in place.
Result<std::vector<Aggregate>> read_aggregates(int map_fd);

// The same, a batch at a time, without holding them all: `fn` gets each batch.
Status visit_aggregates(int map_fd, const AggregateBatchFn& fn);

// Every bucket, each deleted as it is read (atomically per hash bucket), so that a long
// recording can drain the map while the programs keep adding. Use read_aggregates() after
// detaching to avoid losing an add that races with the delete.
Result<std::vector<Aggregate>> drain_aggregates(int map_fd);

// The same, a batch at a time (--switch-output: the map of a window that ended, which no
// program writes any more).
Status drain_aggregates(int map_fd, const AggregateBatchFn& fn);

// The per-CPU counters of the `counters` map, summed over all possible CPUs.
Result<offwake_counters> read_counters(int map_fd);

}  // namespace offwake::bpf
