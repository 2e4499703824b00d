// The live source of scheduler events for perf offwake record --backend tracepoint:
// sched:sched_switch and sched:sched_waking opened through libperf on every online CPU,
// system-wide (a waker can be any thread), every record sampled with its kernel and user
// callchain and raw payload. Each record becomes a SchedEvent (raw fields decoded by
// SchedDecoder with libtraceevent); the per-CPU ring buffers are merged into one time order
// (PassOrder) together with the forks, execs and exits the tracking events report.
#pragma once

#include <cstdint>
#include <functional>
#include <variant>

#include "sched/pass_order.h"
#include "sched/sched_decoder.h"
#include "sched/sched_event.h"
#include "tracking/perf_event_set.h"
#include "util/result.h"

namespace offwake::sched {

// A task change from the tracking events (FORK, COMM with exec, EXIT), in time order with the
// scheduler events: a later block of the tid belongs to another identity.
struct TaskChange {
  enum class Kind : uint8_t { kFork, kExec, kExit };
  Kind kind = Kind::kExit;
  uint32_t parent_tgid = 0;  // kFork: the forking process
  uint32_t tgid = 0, tid = 0;
  uint32_t cpu = 0;  // where it happened (kExit: where a block left open ends)
};

// Records a ring buffer could not take (PERF_RECORD_LOST): the CPU's scheduler events
// between its last record read (`begins`, at that record's time) and the kernel's LOST record
// (`!begins`, at its time) were never seen. Both ends go into the time order.
struct RecordsLost {
  uint64_t count = 0;
  bool begins = false;
};

// A mapping from the tracking events, ordered too when user stacks are unwound (the
// unwinder must see a process's mappings as they were at each of its stacks).
using OrderedEvent = std::variant<SchedEvent, TaskChange, perfdata::Mmap2Record, RecordsLost>;

struct SchedTracepointOptions {
  uint16_t max_stack = 127;    // sample_max_stack: kernel and user frames together
  unsigned mmap_pages = 1024;  // ring buffer pages per CPU (a power of two)
  // --call-graph dwarf,SIZE: instead of the kernel's user callchain, each event copies the
  // user registers and SIZE bytes of user stack (a multiple of 8; 0: no copy).
  uint32_t user_stack_copy = 0;
};

class SchedTracepoints {
 public:
  // Opens both tracepoints (ids from `decoder`) on every online CPU; not enabled yet.
  static Result<SchedTracepoints> open(SchedDecoder decoder, const SchedTracepointOptions& o);

  void enable() { set_.enable(); }
  void disable() { set_.disable(); }
  // Waits up to timeout_ms for a ring buffer to fill to its wakeup mark.
  void poll(int timeout_ms) { set_.poll(timeout_ms); }

  // One pass: reads every ring buffer into the time order. Then add the task changes read
  // since (add_task_change), then release().
  Status read();
  void add_task_change(uint64_t time, const TaskChange& c);
  void add_mapping(uint64_t time, const perfdata::Mmap2Record& m);
  // Hands the events that are safe to release to `fn` in time order (after the last read()
  // pass, or all of them with `all`, at the end).
  void release(const std::function<void(uint64_t time, OrderedEvent&&)>& fn, bool all = false);

  // Records the kernel dropped from the ring buffers (LOST): scheduler events never seen.
  uint64_t lost() const { return lost_; }
  // Records that could not be decoded (not a sample of ours, or a raw payload libtraceevent
  // could not read), and events that came out of time order.
  uint64_t undecodable() const { return set_.undecodable() + undecodable_; }
  // Events whose callchain was cut at a word that is no context marker (Callchain::cut()).
  uint64_t callchains_cut() const { return cut_; }
  uint64_t late() const { return order_.late(); }

 private:
  SchedTracepoints(SchedDecoder decoder, PerfEventSet set)
      : decoder_(std::move(decoder)), set_(std::move(set)), order_(set_.buffers()) {}

  SchedDecoder decoder_;
  PerfEventSet set_;
  PassOrder<OrderedEvent> order_;
  uint64_t lost_ = 0, undecodable_ = 0, cut_ = 0;
  std::vector<uint64_t> last_time_;  // per ring buffer: its latest record's time
};

}  // namespace offwake::sched
