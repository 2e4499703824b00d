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
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "bpf/aggregates.h"
#include "callchain/stack_ids.h"
#include "offwake.h"
#include "sched/sched_event.h"

namespace offwake::sched {

struct PairerOptions {
  std::set<uint32_t> tgids;      // only these processes block (empty: all)
  bool follow_forks = false;     // children of `tgids` join them (fork())
  uint32_t tid = 0;              // only this thread; 0: all
  bool user_threads_only = false, kernel_threads_only = false;
  uint32_t state_mask = OFFWAKE_WANT_S | OFFWAKE_WANT_D | OFFWAKE_WANT_I;
  uint64_t min_block_ns = 0, max_block_ns = 0;
  // Leading kernel frames of a blocked stack inside [start, end) are dropped: the scheduler's
  // own functions (.sched.text, kallsyms __sched_text_start/_end), which the BPF back end's
  // stacks of sleeping tasks leave out too. Unset (--sched-frames): kept.
  std::optional<std::pair<uint64_t, uint64_t>> sched_text;
  // Whether a thread is a kernel thread (for the thread filters and "kthread" wakers);
  // unset: none is.
  std::function<bool(uint32_t tid)> is_kernel_thread;
  // With a timeline: every kept block goes here as it ends, and nothing is aggregated.
  std::function<void(const offwake_event&)> timeline;
};

class BlockPairer : public StackTraceSource {
 public:
  explicit BlockPairer(PairerOptions o) : opt_(std::move(o)) {}

  // Events must come in time order (ties in any order).
  void add(const SchedEvent& e);
  // Process `child` was forked by `parent` (follow_forks); a thread `tid` exec'd or exited:
  // a later block of the same tid is another identity.
  void fork(uint32_t parent_tgid, uint32_t child_tgid);
  void exec(uint32_t tid);
  void exit(uint32_t tid);
  // The recording stopped at `stop`: blocks still open are counted up to it, as the BPF
  // back end does (still_blocked, WAKER_STILL_BLOCKED).
  void finish(uint64_t stop);

  const std::vector<bpf::Aggregate>& aggregates() const { return aggregates_; }
  const offwake_counters& counters() const { return counters_; }

  // StackTraceSource: the frames of a stack id in the keys.
  Result<std::span<const uint64_t>> lookup(uint64_t id) const override;

 private:
  struct Block;  // defined in block_pairer.cpp
  struct Thread;

  PairerOptions opt_;
  std::vector<bpf::Aggregate> aggregates_;
  std::map<std::string, size_t> index_;  // key bytes -> aggregates_ position
  offwake_counters counters_{};
  std::vector<std::vector<uint64_t>> stacks_;                // id -> frames, leaf first
  std::map<std::vector<uint64_t>, uint64_t> stack_ids_;     // and back
  std::unordered_map<uint32_t, Thread*> threads_;
  std::vector<std::unique_ptr<Thread>> thread_store_;
};

}  // namespace offwake::sched
