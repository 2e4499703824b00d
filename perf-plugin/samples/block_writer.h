// Where the blocks of a recording become the samples of its file, whoever paired them: perf
// offwake record's back ends (the BPF programs, or the tracepoints paired in user space) and
// perf offwake convert's pairer of a stock perf recording. An aggregate, or a --timeline
// block, goes through AggregateSamples into the writer and is counted into RecordStats with
// the stacks its samples lack; at the end the blocks lost and the counters follow. So the
// file and its summary are the same whichever source made them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "blocks/aggregate.h"
#include "blocks/pseudo_wakers.h"
#include "callchain/stack_ids.h"
#include "perfdata/writer.h"
#include "samples/aggregate_samples.h"
#include "samples/offwake_events.h"
#include "samples/record_stats.h"
#include "synth/kernel_maps.h"
#include "util/result.h"

namespace offwake {

class BlockWriter {
 public:
  // Called with a block's samples before they are written, for the records that name their
  // threads (perf offwake record describes processes as samples name them); unset: none.
  using DescribeFn = std::function<Status(const std::vector<perfdata::SampleRecord>&)>;
  // When thread `tid` last exited (its PERF_RECORD_EXIT's time), if known; unset: never known.
  using ExitTimeFn = std::function<std::optional<uint64_t>(uint32_t tid)>;

  // `stacks`, `kallsyms` (may be null), `writer` and `stats` must outlive this; the stats'
  // sample_period_ns must be set.
  BlockWriter(perfdata::PerfDataWriter& writer, const StackTraceSource& stacks, OffwakeEventIds ids,
              const Kallsyms* kallsyms, RecordStats& stats, DescribeFn describe = {}, ExitTimeFn exit_time = {});

  // Aggregates' samples, stamped aggregate_time(), in time order: perf queues a file's records
  // by time in a list it searches from the record queued last, so records in random order
  // cost it a walk over the queue each (a file of 100,000 aggregates in hash order kept perf
  // script for minutes before its first line). A source's batch is bounded (bpf: 4096), so
  // the file holds sorted runs, and perf walks its queue about twice per run.
  Status write(std::span<const Aggregate> batch, uint64_t fallback_time);
  // A --timeline block's samples.
  Status write(const offwake_event& e);
  // The stacks the samples lacked into the stats, then the blocks that never became a sample
  // as a LOST_SAMPLES record of offwake-time (stamped `time`), and in a file the stats as our
  // feature section. The stats' other fields must be final.
  Status finish(uint64_t time);

 private:
  Status write_samples(std::vector<perfdata::SampleRecord> samples);
  void stamp_before_exits(std::vector<perfdata::SampleRecord>& samples) const;

  perfdata::PerfDataWriter& writer_;
  AggregateSamples samples_;
  OffwakeEventIds ids_;
  RecordStats& stats_;
  DescribeFn describe_;
  ExitTimeFn exit_time_;
};

// COMM records for the pseudo-threads of wakers that are not threads ("[hardirq]", ...):
// one, or all of them.
Status write_pseudo_waker_comm(perfdata::PerfDataWriter& w, const OffwakeEventIds& ids, const PseudoWaker& p);
Status write_pseudo_waker_comms(perfdata::PerfDataWriter& w, const OffwakeEventIds& ids);

}  // namespace offwake
