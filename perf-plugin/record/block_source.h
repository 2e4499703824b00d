// Where the blocks of a recording come from: "here is a block, with its stacks and its
// waker". Two back ends give them: the BPF programs, which pair switches and wakeups in the
// kernel (BpfBlocks), and the scheduler tracepoints read through libperf and paired in user
// space (TracepointBlocks, --backend tracepoint). Everything after this interface (samples,
// the writer, the summary, loss accounting) exists once (samples/block_writer.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "blocks/aggregate.h"
#include "callchain/stack_ids.h"
#include "offwake.h"
#include "perfdata/records.h"
#include "samples/record_stats.h"
#include "util/result.h"

namespace offwake {

class BlockSource {
 public:
  using EventFn = std::function<Status(const offwake_event&)>;
  virtual ~BlockSource() = default;

  // "bpf" or "tracepoint", as --backend names it.
  virtual const char* name() const = 0;
  // Frames per stack, for --on-cpu samples to match.
  virtual uint32_t stack_depth() const = 0;

  // Starts watching the scheduler.
  virtual Status start() = 0;
  // Each round of the recording loop, in this order: read() takes what the scheduler
  // reported; the tracking records drained next are shown to tracking(); step() then hands
  // the blocks that ended (timeline mode) to `timeline`. A paced() source waits for data
  // in read(); otherwise the recording loop waits on the tracking events.
  virtual bool paced() const { return false; }
  virtual Status read() { return ok_status(); }
  virtual void tracking(const perfdata::Record&) {}
  // Whatever the tracking records shown so far asked for is in place when this returns (the
  // unwind tables of a held command's code, before it runs).
  virtual void settle_tracking() {}
  virtual Status step(const EventFn& timeline) = 0;
  // Stops watching and returns the end of the recording (CLOCK_MONOTONIC): nothing after it
  // is recorded. Then blocks still open are counted up to `stop_ns`, that end.
  // A failure of end_open_blocks() is a warning: the recording stands without them.
  virtual uint64_t detach() = 0;
  virtual Status end_open_blocks(uint64_t stop_ns) = 0;
  // After end_open_blocks() and the last tracking records: the rest of the timeline.
  virtual Status finish(const EventFn& timeline) = 0;

  // --switch-output: the window ends now. The aggregates of the blocks that ended in it (not
  // in timeline mode, whose blocks went to step() as they ended) go to `fn`, a batch at a
  // time, and are gone from the source: the next window starts with none, and blocks that end
  // from now on are the next window's. `at_switch` gets the counts (fill_stats()) as they were
  // when the window ended, before the aggregates were read. Caches of stacks the samples read
  // may be emptied afterwards (memory stays bounded over a long recording).
  virtual Status switch_window(const AggregateBatchFn& fn, RecordStats& at_switch) = 0;

  // The aggregates (not in timeline mode), a batch at a time.
  virtual Status visit_aggregates(const AggregateBatchFn& fn) const = 0;
  // The stacks behind the aggregates' and events' stack ids.
  virtual const StackTraceSource& stacks() const = 0;
  // Counters and losses, into the recording's stats.
  virtual Status fill_stats(RecordStats& stats) const = 0;
  // Whether a process is one whose blocks are recorded (with -p or a command; its children
  // join as they fork). For --on-cpu samples.
  virtual bool is_target(uint32_t pid) = 0;
};

}  // namespace offwake
