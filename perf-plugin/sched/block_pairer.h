// The tracepoint back end's counterpart of the BPF programs: scheduler events in time order
// in, blocks out. A switch-out starts a block of prev, a waking records its waker, the
// switch-in ends it; filters apply as in the kernel. The result is what the BPF side hands
// to user space: aggregates (struct offwake_key -> offwake_value) or, with a timeline, one
// struct offwake_event per block, the counters of struct offwake_counters that apply, and
// the stacks behind the ids (a StackTraceSource), so that AggregateSamples turns them into
// the same samples.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "blocks/aggregate.h"
#include "blocks/block_filters.h"
#include "callchain/stack_ids.h"
#include "offwake.h"
#include "sched/sched_event.h"

namespace offwake::sched {

// The filters (BlockFilters; follow_forks: children join `tgids` at fork()), and what the
// pairer needs to know that the kernel knows.
struct PairerOptions : BlockFilters {
  // Leading (leaf-side) kernel frames that are dropped from blocked stacks while this says
  // so: the tracing machinery that reached the tracepoint (__traceiter_sched_switch, ...) and
  // the scheduler's own functions (.sched.text: __schedule, schedule, do_nanosleep, ...),
  // which the BPF back end's stacks of sleeping tasks leave out too (keep those with
  // --sched-frames). Unset: nothing is dropped.
  std::function<bool(uint64_t ip)> drop_leading_kernel;
  // Whether a thread is a kernel thread (for the thread filters and "kthread" wakers);
  // unset: none is.
  std::function<bool(uint32_t tid)> is_kernel_thread;
  // Whether a kernel frame is an interrupt's entry stub (is_interrupt_entry_stub): a wakeup in
  // a softirq with none in its callchain was run by the task itself, which is then its waker
  // (offwake_softirq_is_tasks). Unset: every wakeup in a softirq is "[softirq]"'s.
  std::function<bool(uint64_t ip)> is_interrupt_entry;
  // Every switch of every CPU is fed (the live tracepoint back end, not a per-task
  // recording): a CPU seen to switch away from a task it was not seen to switch to is a switch
  // the kernel gave no event for, counted in untraced_switches.
  bool every_switch = false;
  // With a timeline: every kept block goes here as it ends, and nothing is aggregated.
  std::function<void(const offwake_event&)> timeline;
  // Completes the user half of a stack the pairer keeps, before it is split (a blocked
  // thread's at its switch-out, a task waker's at a wakeup of a block kept, or that may be:
  // one on the way into the scheduler of a thread the filters want): the tracepoint back
  // end and convert unwind the event's user stack copy there (--call-graph dwarf), in time
  // order with the mappings, and only for the stacks that are used. Unset: the callchain as
  // the event has it.
  std::function<void(const SchedEvent& e, Callchain& chain)> complete_stack;
};

class BlockPairer : public StackTraceSource {
 public:
  explicit BlockPairer(PairerOptions o) : opt_(std::move(o)) {}

  // Events must come in time order (ties in any order).
  void add(const SchedEvent& e);
  // Process `child` was forked by `parent` (follow_forks); a thread `tid` exec'd or exited:
  // a later block of the same tid is another identity. A thread that exits at `time` (on
  // `cpu`) with its block still open ran again without its switch-in being traced: that block
  // ends late there (see switch_out), rather than vanishing with the thread.
  void fork(uint32_t parent_tgid, uint32_t child_tgid);
  void exec(uint32_t tid);
  void exit(uint32_t tid, uint64_t time, uint32_t cpu);
  // Scheduler events of some CPU are lost from `time` (its ring buffer was full) until
  // loss_ends(). A block open then, or starting meanwhile, may lose its wakeup or its
  // switch-in, and would end at a later event of its thread, much too long, or without its
  // waker: such blocks are dropped and counted as lost (ringbuf_drops; with their time up to
  // `time`, for those open then). What is known of the CPUs' current tasks (at both ends) and
  // of wakeups is forgotten. Losses of several CPUs may overlap.
  void loss_begins(uint64_t time);
  void loss_ends();
  // The recording stopped at `stop`: blocks still open are counted up to it, as the BPF
  // back end does (still_blocked, WAKER_STILL_BLOCKED).
  void finish(uint64_t stop);

  const std::vector<Aggregate>& aggregates() const { return aggregates_; }
  // --switch-output: the aggregates so far, handed over; the pairer starts again from none.
  std::vector<Aggregate> take_aggregates() {
    index_.clear();
    return std::exchange(aggregates_, {});
  }
  const offwake_counters& counters() const { return counters_; }

  // StackTraceSource: the frames of a stack id in the keys.
  Result<std::span<const uint64_t>> lookup(uint64_t id) const override;

 private:
  // What the pairer knows of a thread: who it is, its open block, and its recorded waker.
  struct Thread {
    uint32_t tgid = 0;
    uint64_t generation = 1;  // bumped by exec and exit: the key's ident
    std::string comm;
    int running_on = -1;      // the CPU it is current on, -1 if none
    bool blocked = false;     // a block is open, since block_ts
    uint64_t block_ts = 0;
    uint64_t keep_ns = 0;     // it is kept once this long (offwake_keep_threshold)
    uint32_t state = 0;
    uint64_t cgroup = 0;      // of the open block, at its switch-out
    int64_t kern = kNoStack, user = kNoStack;
    // The recorded wakeup (woken), and whether it came while the thread was still on its
    // way into the scheduler: then it belongs to the block its switch-out starts.
    bool woken = false, wake_on_cpu = false;
    uint64_t wake_ts = 0;
    uint32_t waker_flags = 0, waker_tgid = 0, waker_tid = 0;
    uint64_t waker_ident = 0, waker_cgroup = 0;
    int64_t waker_kern = kNoStack, waker_user = kNoStack;
    std::string waker_comm;
  };

  Thread& thread(uint32_t tid);
  bool wanted(uint32_t tid, const Thread& t) const;
  int64_t intern(std::vector<uint64_t> frames, int half);
  // `complete`: the stack may be kept, so PairerOptions::complete_stack completes it.
  void split(const SchedEvent& e, bool blocked, int64_t& kern, int64_t& user, bool complete = true);
  void switch_out(const SchedEvent& e);
  void switch_in(const SchedEvent& e);
  void waking(const SchedEvent& e);
  // Whether t's recorded wakeup ended its open block (block_rules.h); `ran_since`: t ran
  // again with the block open.
  static bool owns_wakeup(const Thread& t, bool ran_since);
  // t runs (seen at `now` on `cpu`) with its block still open: its switch-in was not traced.
  void end_late(uint32_t tid, Thread& t, uint64_t now, uint32_t cpu);
  // t's open block ended at `end`: kept (aggregated or sent) or filtered, and counted.
  void end_block(uint32_t tid, Thread& t, uint64_t end, uint32_t cpu, bool with_waker, uint32_t no_waker);
  bool kernel_thread(uint32_t tid) const;
  bool softirq_is_tasks(const SchedEvent& e) const;
  // Whether t's open block, `delta` long (so far), is kept; if not, counted.
  bool kept(const Thread& t, uint64_t delta);

  PairerOptions opt_;
  std::vector<Aggregate> aggregates_;
  std::map<std::string, size_t> index_;  // key bytes (without a chain) -> aggregates_ position
  offwake_counters counters_{};
  std::vector<std::vector<uint64_t>> stacks_;            // id -> frames, leaf first
  std::map<std::vector<uint64_t>, int64_t> stack_ids_[2];  // and back, per half
  std::unordered_map<uint32_t, Thread> threads_;
  std::unordered_map<uint32_t, uint32_t> cpu_current_;    // cpu -> tid
  uint32_t losses_ = 0;                                   // losses under way (loss_begins)
  std::mt19937_64 random_{std::random_device{}()};        // --sample-period's draws
};

}  // namespace offwake::sched
