// Every shortcut in how stacks are taken gives the same result as the plain way. Two sets of
// BPF programs, loaded with different options, record the same run of a workload at once:
// both see the same blocks, so their aggregates must hold the same stacks, frame for frame
// (after the tracing frames are dropped, as perf.data gets them), the same counts, and the
// same times up to the microseconds between the two programs' clock reads.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "bpf/offwake_loader.h"
#include "samples/aggregate_samples.h"
#include "support/paths.h"
#include "support/tolerances.h"
#include "support/truth.h"
#include "synth/kernel_maps.h"
#include "capture.h"

namespace offwake::bpf {
namespace {

// Runs `workload` once under each of `options` (all attached at once).
void run_under(const std::string& workload, const std::vector<std::string>& args,
               std::vector<LoaderOptions> options, std::vector<Capture>* out, Truth* truth) {
  std::string text;
  ASSERT_NO_FATAL_FAILURE(run_captures(workload, args, std::move(options), out, &text));
  auto truths = parse_truth(text);
  ASSERT_FALSE(truths.empty()) << text;
  *truth = truths.front();
}

// (blocked tid, blocked frames, waker tid, waker frames) -> (ns, count), frames as perf.data
// gets them.
using Frames = std::vector<uint64_t>;
using Key = std::tuple<uint32_t, Frames, uint32_t, Frames, uint32_t>;
struct Sum {
  uint64_t ns = 0, count = 0;
};

// Blocks whose switch-in the kernel did not trace ("ended late": it happens here when the
// VM's init process is on the CPU) have no kernel stack in either capture, and lazily no user
// stack either (the task may have left that system call): they are compared by count only.
bool ended_late(const Aggregate& a) { return a.key.kern_stack_id == -OFFWAKE_ERR_NOT_TRACED; }

// The blocks of `c` whose aggregates `pred` picks.
uint64_t blocks_where(const Capture& c, bool (*pred)(const Aggregate&)) {
  uint64_t n = 0;
  for (const Aggregate& a : c.aggregates)
    if (pred(a)) n += a.value.count;
  return n;
}

uint64_t late_blocks(const Capture& c) { return blocks_where(c, ended_late); }

// A block that reached --min-block only while it waited on the run queue has no waker in a
// lazy capture (waker flag OFFWAKE_WAKER_EARLY, counted): the eager capture has it. Such
// blocks are compared without their wakers.
bool woken_early(const Aggregate& a) { return a.key.waker_flags & OFFWAKE_WAKER_EARLY; }

// Whether a blocked kernel stack is inside an execve: reading the new image. Its user registers
// are the old image's until the exec replaces them, so a lazy capture, which takes them on the
// way back to user space, finds the new image's and takes none (user_stack_exec), where an eager
// one walked the old image's stack at switch-out (seen in CI after a rebuild left the
// workload's binary out of the page cache).
bool in_execve(const Callchain& chain, const Kallsyms& kallsyms) {
  for (const Frame& fr : chain.frames()) {
    if (fr.context != FrameContext::kKernel) continue;
    const KernelSymbol* sym = kallsyms.find(fr.ip);
    if (sym && sym->name == "bprm_execve") return true;
  }
  return false;
}

// Keyed with the waker's thread and frames, or (with_waker false) without either.
// With `fault_user_frames` false, the user frames of blocks in uninterruptible sleep (page
// faults, exec) are left out of the key (see OwnUserWalkGivesTheKernelsFrames); blocks inside
// an execve never have theirs in it (in_execve).
// With `keep`, only the aggregates it keeps.
std::map<Key, Sum> by_stacks(const Capture& c, const Kallsyms& kallsyms, bool with_waker,
                             bool fault_user_frames = true, bool (*keep)(const Aggregate&) = nullptr) {
  AggregateSamples convert(*c.stacks, OffwakeEventIds{1, 2}, &kallsyms);
  auto ips = [&](const Callchain& chain, bool user = true) {
    Frames f;
    for (const Frame& fr : chain.frames())
      if (user || fr.context == FrameContext::kKernel) f.push_back(fr.ip);
    return f;
  };
  std::map<Key, Sum> out;
  for (const Aggregate& a : c.aggregates) {
    if (ended_late(a) || (with_waker && woken_early(a)) || (keep && !keep(a))) continue;
    auto samples = convert.convert(a, 1);
    const auto& blocked = samples.at(0);
    const auto& waker = samples.at(1);
    const bool user = (fault_user_frames || !(a.key.state & OFFWAKE_STATE_UNINTERRUPTIBLE)) &&
                      !in_execve(blocked.callchain, kallsyms);
    Sum& s = out[{a.key.tid, ips(blocked.callchain, user), with_waker ? a.key.waker_tid : 0,
                  with_waker ? ips(waker.callchain) : Frames{}, a.key.state}];
    s.ns += a.value.total_ns;
    s.count += a.value.count;
  }
  return out;
}

uint64_t early_blocks(const Capture& c) {
  return blocks_where(c, [](const Aggregate& a) { return woken_early(a) && !ended_late(a); });
}

// Kept with no waker at all (OFFWAKE_WAKER_NONE, counted in missed_wakeups).
bool missed_waker(const Aggregate& a) { return (a.key.waker_flags & OFFWAKE_WAKER_NONE) != 0; }

uint64_t missed_blocks(const Capture& c) {
  return blocks_where(c, [](const Aggregate& a) { return missed_waker(a) && !ended_late(a) && !woken_early(a); });
}

// The blocks of `c` without a recorded waker, by blocked stack (waker fields zero): woken
// early, or none seen. The two captures can disagree on whether a wakeup ended a block:
// sched_waking fires before try_to_wake_up looks at the wakee's on_rq and takes its run queue's
// lock (kernel/sched/core.c: `READ_ONCE(p->on_rq) && ttwu_runnable()`). A wakee that another
// CPU is just taking off its run queue on its way to sleep can still be queued for the first
// capture's program, which ignores the wakeup as one of a runnable task, and already dequeued
// for the second's, which records it as the waker of the block about to start. The first
// keeps that block without a waker and counts it (missed_wakeups).
std::map<Key, Sum> unrecorded_wakers(const Capture& c, const Kallsyms& kallsyms, bool fault_user_frames) {
  return by_stacks(c, kallsyms, false, fault_user_frames,
                   [](const Aggregate& a) { return woken_early(a) || missed_waker(a); });
}

std::string describe(const Key& k) {
  std::ostringstream s;
  s << "tid " << std::get<0>(k) << " (" << std::get<1>(k).size() << " frames) woken by " << std::get<2>(k) << " ("
    << std::get<3>(k).size() << " frames), state " << std::get<4>(k);
  return s.str();
}

// A key's blocked frames, for a failure message.
std::string frames_of_key(const Key& k) {
  std::ostringstream s;
  s << describe(k) << ":" << std::hex;
  for (uint64_t ip : std::get<1>(k)) s << " " << ip;
  return s.str();
}

std::string stacks_of_tid(const std::map<Key, Sum>& m, uint32_t tid) {
  std::string out;
  for (const auto& [k, sum] : m)
    if (std::get<0>(k) == tid) out += "\n  " + std::to_string(sum.count) + "x " + frames_of_key(k);
  return out;
}

// The two captures hold the same blocked stacks, wakers and counts; times agree within 1%
// plus 500 us a block (test::kSameRunTimeTolerance, kSameRunPerBlockNs): the programs of the
// two captures run one after the other at each tracepoint, so each reads the clock after the
// other's work there (microseconds), and on this paravirtualised machine the virtual CPU is
// now and then taken away between the two for a few hundred microseconds. A block counted
// twice or lost would be 20 ms off. The wakers are the same, stacks frame for frame, but for
// blocks whose lazy capture did not record them (see woken_early).
//
// With --min-block, a block that lasted within kSameRunPerBlockNs of it can be kept by one
// capture and dropped by the other, for the same reason (once in a CI run: wl_pipe's wait for
// its child). Such a stack (each of its blocks that short, on average) may be missing from
// the other capture.
bool at_min_block(const Capture& c, const Sum& s) {
  return c.min_block_ns && s.ns <= s.count * (c.min_block_ns + test::kSameRunPerBlockNs);
}

size_t missing_at_min_block(const Capture& c, const std::map<Key, Sum>& of, const std::map<Key, Sum>& in) {
  size_t n = 0;
  for (const auto& [k, s] : of) n += !in.count(k) && at_min_block(c, s);
  return n;
}

void expect_same(const Capture& a, const Capture& b, bool fault_user_frames = true) {
  auto kallsyms = Kallsyms::load();
  ASSERT_TRUE(kallsyms.ok());
  auto ma = by_stacks(a, *kallsyms, false, fault_user_frames), mb = by_stacks(b, *kallsyms, false, fault_user_frames);
  ASSERT_FALSE(ma.empty());
  for (const auto& [k, s] : ma) {
    SCOPED_TRACE(describe(k));
    auto it = mb.find(k);
    if (it == mb.end() && at_min_block(a, s)) continue;
    ASSERT_NE(it, mb.end()) << "a stack of the first capture is missing from the second:\n  " << frames_of_key(k)
                            << "\nthe second's stacks of that thread:" << stacks_of_tid(mb, std::get<0>(k));
    EXPECT_EQ(s.count, it->second.count);
    EXPECT_LT(std::fabs(static_cast<double>(s.ns) - static_cast<double>(it->second.ns)),
              test::kSameRunTimeTolerance * static_cast<double>(s.ns) +
                  test::kSameRunPerBlockNs * static_cast<double>(s.count))
        << s.ns << " vs " << it->second.ns;
  }
  EXPECT_EQ(ma.size() - missing_at_min_block(a, ma, mb), mb.size() - missing_at_min_block(b, mb, ma));
  auto wa = by_stacks(a, *kallsyms, true, fault_user_frames), wb = by_stacks(b, *kallsyms, true, fault_user_frames);
  // A block's waker may differ only where the other capture recorded none for the same
  // blocked stack: woken before the threshold (lazily, see woken_early), or a wakeup it took
  // for one of a runnable task (see unrecorded_wakers). Never two different wakers.
  auto spare = unrecorded_wakers(b, *kallsyms, fault_user_frames);
  uint64_t unmatched = 0;
  std::string differ;
  for (const auto& [k, s] : wa) {
    if (std::get<2>(k) == 0 && std::get<3>(k).empty()) continue;  // no waker here: the other way round
    auto it = wb.find(k);
    if (it == wb.end() && at_min_block(a, s)) continue;
    uint64_t deficit = s.count - std::min(s.count, it == wb.end() ? 0 : it->second.count);
    uint64_t& none = spare[{std::get<0>(k), std::get<1>(k), 0, Frames{}, std::get<4>(k)}].count;
    const uint64_t covered = std::min(deficit, none);
    none -= covered;
    deficit -= covered;
    unmatched += deficit;
    if (deficit) differ += "\n  " + std::to_string(deficit) + " block(s): " + describe(k);
  }
  EXPECT_EQ(unmatched, 0u) << "wakers differ beyond the blocks whose wakers were not recorded:" << differ;
  EXPECT_LE(early_blocks(a), a.counters.woken_early);
  EXPECT_LE(missed_blocks(a), a.counters.missed_wakeups);
  EXPECT_EQ(late_blocks(a), late_blocks(b));
  EXPECT_LE(late_blocks(a), a.counters.late_ends);
}

// The blocks of the truth's thread in `c`, told apart once: the truth's own (its function on
// their user stack), those that ended late without a user stack (the truth's too, that could
// not show it), and the others that did not end late. Such another block (a start-up page fault
// that waited a millisecond for I/O, say) may come before the truth's first, which is then
// walked at switch-out rather than deferred: a thread's block is deferred only after a
// shorter one.
struct ThreadBlocks {
  uint64_t truths = 0, late_without_user_stack = 0, others = 0;
};

ThreadBlocks thread_blocks(const Range& fn, const Capture& c, const Truth& t) {
  ThreadBlocks b;
  for (const Aggregate& a : c.aggregates) {
    if (a.key.tid != t.tid) continue;
    if (stack_hits(frames_of(*c.stacks, a.key.user_stack_id), fn))
      b.truths += a.value.count;
    else if (!ended_late(a))
      b.others += a.value.count;
    else if (a.key.user_stack_id == -OFFWAKE_ERR_NOT_TRACED)
      b.late_without_user_stack += a.value.count;
  }
  return b;
}

// The truth's blocking function is in the user stacks of the capture, so that the comparison is
// about real stacks. Its count is exact (as the kernel counts them: wl_blocks_so_far,
// tests/workloads/wl_common.h), counting the blocks that ended late (ended_late) whose deferred
// user stack is gone with their switch-in: compared by count only, as expect_same does.
void expect_truth_seen(const std::string& workload, const Capture& c, const Truth& t) {
  auto fn = function_range(kWorkloads + workload, t.function);
  ASSERT_TRUE(fn);
  const ThreadBlocks b = thread_blocks(*fn, c, t);
  EXPECT_EQ(b.truths + b.late_without_user_stack, t.count) << t.function;
}

// thread_blocks().others, for the tests of deferral.
uint64_t other_blocks_of_thread(const std::string& workload, const Capture& c, const Truth& t) {
  auto fn = function_range(kWorkloads + workload, t.function);
  if (!fn) {
    ADD_FAILURE() << t.function << " not found in " << workload;
    return 0;
  }
  return thread_blocks(*fn, c, t).others;
}

// The blocks of thread `tid` in `c`, one line an aggregate, for a failure's message.
std::string blocks_of_thread(const Capture& c, uint32_t tid) {
  std::string text;
  for (const Aggregate& a : c.aggregates)
    if (a.key.tid == tid)
      text += "\n  " + std::to_string(a.value.count) + " blocks, " + std::to_string(a.value.total_ns) +
              " ns, state " + std::to_string(a.key.state) + ", kernel stack " + std::to_string(a.key.kern_stack_id) +
              ", user stack " + std::to_string(a.key.user_stack_id) + " (" +
              std::to_string(frames_of(*c.stacks, a.key.user_stack_id).size()) + " frames)";
  return text;
}

class Capture3 : public ::testing::TestWithParam<const char*> {};

// Lazy capture (a duration filter: user stacks when the system call returns, waker stacks only
// for blocks that reached the threshold) against eager capture with the same filter.
TEST_P(Capture3, LazyAndEagerCaptureAreIdentical) {
  LoaderOptions lazy, eager;
  lazy.min_block_ns = eager.min_block_ns = 1'000'000;  // 1 ms: the workloads block 20 ms
  eager.eager = true;
  // The same with a threshold no block reaches: lazily, nothing is paid for them.
  LoaderOptions lazy_none = lazy, eager_none = eager;
  lazy_none.min_block_ns = eager_none.min_block_ns = 10'000'000'000ull;
  std::vector<Capture> caps;
  Truth t;
  ASSERT_NO_FATAL_FAILURE(
      run_under(GetParam(), {"-n", "10", "-m", "20"}, {lazy, eager, lazy_none, eager_none}, &caps, &t));
  expect_truth_seen(GetParam(), caps[0], t);
  expect_same(caps[0], caps[1]);
  expect_same(caps[1], caps[0]);
  const offwake_counters &none = caps[2].counters, &eager_paid = caps[3].counters;
  EXPECT_TRUE(caps[2].aggregates.empty());
  EXPECT_GE(none.filtered, t.count);
  EXPECT_EQ(none.stack_captures[OFFWAKE_KERNEL], 0u);
  // Lazily, a user stack is walked only for a block that cannot wait for the end of its
  // system call: one outside a system call (a page fault waiting for I/O: its registers are not
  // kept until a system call returns), walked at switch-out as the eager capture walks it, so
  // within the eager walks beyond the workload's own blocks (all system calls); and one whose
  // switch-in went untraced and that may still be kept (its end not yet known: no wakeup of its
  // own was seen), walked on its way back to user space: at most the blocks that ended late in
  // the same run (caps[1] keeps all the workload's blocks). A capture that walked every block
  // fails this unless all of them ended late.
  const uint64_t eager_walks = eager_paid.stack_captures[OFFWAKE_USER];
  ASSERT_GE(eager_walks, t.count);
  EXPECT_LE(none.stack_captures[OFFWAKE_USER], eager_walks - t.count + late_blocks(caps[1]))
      << eager_walks << " eager walks, " << t.count << " blocks of the workload, " << late_blocks(caps[1])
      << " ended late";
  EXPECT_LT(late_blocks(caps[1]), t.count);
}

// The three ways a deferred user stack is taken give the same stacks as the eager capture: at
// rseq_update on the way back to user space (glibc registers rseq for every thread, so lazy
// capture uses it), by a task work there (threads without rseq; this kernel has the kfunc),
// and, where that kfunc is missing or refused to the scheduler's programs (some 6.18 kernels:
// "sleepable callback in a program that is not sleepable"), by the sys_exit program (blocks
// inside a system call only). A refusal is told by the load that tried the task work, and
// then the task work's capture must be the sys_exit way's.
TEST_P(Capture3, RseqTaskWorkAndSysExitTakeTheSameUserStacks) {
  LoaderOptions rseq, task_work, sys_exit, eager;
  rseq.min_block_ns = task_work.min_block_ns = sys_exit.min_block_ns = eager.min_block_ns = 1'000'000;
  task_work.rseq_user_stacks = sys_exit.rseq_user_stacks = false;
  sys_exit.sys_exit_user_stacks = true;
  eager.eager = true;
  std::vector<Capture> caps;
  Truth t;
  ASSERT_NO_FATAL_FAILURE(
      run_under(GetParam(), {"-n", "10", "-m", "20"}, {rseq, task_work, sys_exit, eager}, &caps, &t));
  ASSERT_TRUE(kernel_has_task_work()) << "this suite runs on Linux 6.18+, which has bpf_task_work_schedule_resume";
  ASSERT_TRUE(kernel_has_rseq_update()) << "this suite runs on a kernel with the rseq_update tracepoint";
  EXPECT_TRUE(caps[0].rseq);
  EXPECT_NE(caps[1].task_work, caps[1].task_work_refused);
  EXPECT_FALSE(caps[1].rseq);
  EXPECT_FALSE(caps[2].task_work);
  EXPECT_FALSE(caps[2].task_work_refused) << "the sys_exit way does not try task work";
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    expect_truth_seen(GetParam(), caps[i], t);
    expect_same(caps[i], caps[3]);
    expect_same(caps[3], caps[i]);
  }
  // Each of the workload's kept blocks had its user stack deferred to rseq_update, without a
  // single task work (a block whose thread's process was on the CPU at its switch-in is
  // walked there instead: at most the other half). With task work, a thread's first kept
  // block is deferred, and its later ones walked at switch-out (its last block was kept).
  EXPECT_GE(caps[0].counters.user_parked * 2, t.count);
  EXPECT_EQ(caps[0].counters.user_work_scheduled, 0u);
  // (Unless that first block's switch-in went untraced: then nothing was scheduled.)
  if (caps[1].task_work) {
    EXPECT_GT(caps[1].counters.user_work_scheduled + late_blocks(caps[1]), 0u);
    EXPECT_EQ(caps[1].counters.user_parked, 0u);
  } else {
    EXPECT_EQ(caps[1].counters.user_work_scheduled, 0u);
    // The sys_exit way, as caps[2]: a thread's first kept block parked, later ones walked at
    // switch-out (its last block was kept). The first of the truth's is parked unless a longer
    // block of the thread came before it (CI once had neither parked nor late).
    const uint64_t other = other_blocks_of_thread(GetParam(), caps[1], t);
    EXPECT_GT(caps[1].counters.user_parked + late_blocks(caps[1]) + other, 0u)
        << "refused task work: the sys_exit way; " << caps[1].counters.user_parked << " parked, "
        << late_blocks(caps[1]) << " ended late, " << other << " other blocks of the thread, "
        << caps[1].counters.stack_captures[OFFWAKE_USER] << " user walks; the thread's blocks:"
        << blocks_of_thread(caps[1], t.tid);
  }
  EXPECT_EQ(caps[0].counters.user_work_failed + caps[1].counters.user_work_failed, 0u);
}

// A thread without rseq (glibc's tunable turns its registration off) has its deferred user
// stacks taken by task work while the threads with rseq use rseq_update: both right. Where
// the kernel refuses the task work, walked at switch-out: right too.
TEST(Rseq, AThreadWithoutRseqFallsBackToTaskWork) {
  LoaderOptions lazy, eager;
  lazy.min_block_ns = eager.min_block_ns = 1'000'000;
  eager.eager = true;
  setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
  std::vector<Capture> caps;
  Truth t;
  run_under("wl_pipe", {"-n", "10", "-m", "20"}, {lazy, eager}, &caps, &t);
  unsetenv("GLIBC_TUNABLES");
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(caps[0].rseq);
  expect_truth_seen("wl_pipe", caps[0], t);
  expect_same(caps[0], caps[1]);
  expect_same(caps[1], caps[0]);
  EXPECT_NE(caps[0].task_work, caps[0].task_work_refused);
  if (caps[0].task_work) {
    EXPECT_GT(caps[0].counters.user_work_scheduled, 0u);
    EXPECT_EQ(caps[0].counters.user_parked, 0u) << "no thread of the workload has rseq";
  } else {
    // Refused task work: with rseq_update loaded, a thread without rseq has its stacks walked
    // at switch-out, not parked (no sys_exit program).
    EXPECT_EQ(caps[0].counters.user_work_scheduled, 0u);
    EXPECT_EQ(caps[0].counters.user_parked, 0u);
  }
  EXPECT_EQ(caps[0].counters.user_work_failed, 0u);
}

// Our frame-pointer walk against the kernel's (bpf_get_stackid(BPF_F_USER_STACK)).
TEST_P(Capture3, OwnUserWalkGivesTheKernelsFrames) {
  LoaderOptions own, kernel;
  kernel.kernel_user_walker = true;
  std::vector<Capture> caps;
  Truth t;
  ASSERT_NO_FATAL_FAILURE(run_under(GetParam(), {"-n", "10", "-m", "20"}, {own, kernel}, &caps, &t));
  expect_truth_seen(GetParam(), caps[0], t);
  // The workloads block in interruptible sleep, in code with frame pointers. The user frames
  // of their other blocks (uninterruptible: page faults and exec at start-up, in the dynamic
  // loader or the test's own child before exec, code without frame pointers whose rbp holds
  // whatever it held) are not compared: the kernel's walk follows such a chain wherever it
  // can read (it has no ordering check), ours stops at the first link that does not point up
  // the stack. Their kernel frames, counts and times are compared as for every block.
  expect_same(caps[0], caps[1], false);
  expect_same(caps[1], caps[0], false);
  EXPECT_EQ(caps[0].counters.stack_walk_failed[OFFWAKE_USER], 0u);
}

// A stack whose stack_trace bucket is taken goes to the stack store: with a stack_trace map of
// two entries, nearly every stack does, and nothing is lost.
TEST_P(Capture3, StackTraceCollisionsFallBackToTheStore) {
  LoaderOptions plain, tiny;
  tiny.stack_map_entries = 2;
  tiny.stack_store_entries = 16384;
  std::vector<Capture> caps;
  Truth t;
  ASSERT_NO_FATAL_FAILURE(run_under(GetParam(), {"-n", "10", "-m", "20"}, {plain, tiny}, &caps, &t));
  expect_same(caps[0], caps[1]);
  expect_same(caps[1], caps[0]);
  const offwake_counters& c = caps[1].counters;
  // Waker kernel stacks taken in an interrupt go to the stack_trace map (a task's are unwound
  // into the store, bpf-progs/kernel_memo.bpf.h): with two buckets, all distinct ones but at
  // most two went to the store instead. wl_sleep's wakers are timer interrupts. Counted in the
  // capture with two buckets itself: the other capture's interrupts (incidental in wl_condvar)
  // need not be the same.
  std::set<int64_t> irq_waker_stacks;
  for (const Aggregate& a : caps[1].aggregates)
    if (a.key.waker_kern_stack_id >= 0 && (a.key.waker_flags & OFFWAKE_WAKER_IRQ_MASK))
      irq_waker_stacks.insert(a.key.waker_kern_stack_id);
  if (std::string(GetParam()) == "wl_sleep") {
    EXPECT_FALSE(irq_waker_stacks.empty());
  }
  EXPECT_GE(c.stack_store_fallbacks[OFFWAKE_KERNEL] + 2, irq_waker_stacks.size());
  EXPECT_EQ(c.stack_collision[OFFWAKE_KERNEL] + c.stack_collision[OFFWAKE_USER], 0u);
  EXPECT_EQ(c.stack_map_full[OFFWAKE_KERNEL] + c.stack_map_full[OFFWAKE_USER], 0u);
}

INSTANTIATE_TEST_SUITE_P(Workloads, Capture3, ::testing::Values("wl_condvar", "wl_pipe", "wl_sleep"),
                         [](const auto& info) { return std::string(info.param); });

// A block woken 990 us in, just before --min-block 1000, that reaches it on the run queue: the
// waker, a SCHED_FIFO thread on the same CPU, writes the pipe at that offset into the main
// thread's read() and then keeps the CPU for 3 ms (wl_late_run -u 990). Lazily its stacks are
// not taken then, but it is named, as --eager names it: the workload's own waker thread, for
// every block, never "no wakeup seen" nor a nameless early waker. Counts and times against the
// workload's own measurement. The case is driven: most wakeups come before --min-block (the
// FIFO thread spins to the offset; a virtual CPU taken away at that moment can make one late).
TEST(EarlyWakers, AreNamedAsTheEagerCaptureNamesThem) {
  LoaderOptions lazy, eager;
  lazy.min_block_ns = eager.min_block_ns = 1'000'000;
  eager.eager = true;
  constexpr int kRounds = 20;
  std::vector<Capture> caps;
  std::string text;
  ASSERT_NO_FATAL_FAILURE(run_captures("wl_late_run", {"-n", std::to_string(kRounds), "-m", "3", "-u", "990"},
                                       {lazy, eager}, &caps, &text));
  auto truths = parse_truth(text);
  ASSERT_FALSE(truths.empty()) << text;
  const Truth* t = &truths.front();
  // Rounds in which other load also preempted the main thread are left out of the truth
  // ("impure"): recorded all the same, so the recorded time may exceed the truth by theirs.
  const auto impure_at = text.find("impure rounds=");
  ASSERT_NE(impure_at, std::string::npos) << text;
  const uint64_t impure_rounds = std::stoull(text.substr(impure_at + 14));
  const double impure_ns = std::stod(text.substr(text.find("blocked_ns=", impure_at) + 11));
  ASSERT_GE(t->count + impure_rounds, kRounds / 2u) << "the machine was too busy to drive the case: " << text;
  auto fn = function_range(kWorkloads + "wl_late_run", t->function);
  ASSERT_TRUE(fn);
  for (size_t i = 0; i < caps.size(); ++i) {
    SCOPED_TRACE(i == 0 ? "lazy" : "eager");
    const Capture& c = caps[i];
    uint64_t blocks = 0, ns = 0, named = 0, early = 0, early_without_stacks = 0;
    std::string others;
    for (const Aggregate& a : c.aggregates) {
      if (a.key.tid != t->tid || !stack_hits(frames_of(*c.stacks, a.key.user_stack_id), *fn))
        continue;
      blocks += a.value.count;
      ns += a.value.total_ns;
      if (a.key.waker_tid == t->waker_tid)
        named += a.value.count;
      else
        others += " " + std::to_string(a.value.count) + "x tid " + std::to_string(a.key.waker_tid) + " flags " +
                  std::to_string(a.key.waker_flags);
      if (a.key.waker_flags & OFFWAKE_WAKER_EARLY) {
        early += a.value.count;
        if (a.key.waker_kern_stack_id == OFFWAKE_NO_STACK && a.key.waker_user_stack_id == OFFWAKE_NO_STACK)
          early_without_stacks += a.value.count;
      }
    }
    EXPECT_GE(blocks, t->count);
    EXPECT_LE(blocks, t->count + impure_rounds);
    EXPECT_GE(static_cast<double>(ns), (1 - test::kBlockedTimeTolerance) * static_cast<double>(t->blocked_ns));
    EXPECT_LE(static_cast<double>(ns),
              (1 + test::kBlockedTimeTolerance) * static_cast<double>(t->blocked_ns) + impure_ns);
    // A wakeup the kernel hid (no BPF program runs while this VM's init process is on the
    // CPU) could leave a block without its waker: as rarely as the truth allows.
    EXPECT_LE(blocks - std::min(named, blocks), test::max_missed_blocks(t->count))
        << "wakers other than the workload's:" << others;
    if (i == 0) {
      EXPECT_GE(early * 2, blocks) << "most wakeups should come before --min-block";
      EXPECT_EQ(early_without_stacks, early);
      EXPECT_GE(c.counters.woken_early, early);
    } else {
      EXPECT_EQ(early, 0u);
    }
  }
}

// --sched-frames: blocked kernel stacks taken at switch-out keep the scheduler's functions,
// which a sleeping task's stack leaves out; below them the stacks are the same functions.
TEST(SchedFrames, KeepTheSchedulersOwnFrames) {
  LoaderOptions plain, sched;
  sched.sched_frames = true;
  std::vector<Capture> caps;
  Truth t;
  ASSERT_NO_FATAL_FAILURE(run_under("wl_pipe", {"-n", "10", "-m", "20"}, {plain, sched}, &caps, &t));
  auto kallsyms = Kallsyms::load();
  ASSERT_TRUE(kallsyms.ok());
  auto kernel_names = [&](const Capture& c) {
    std::set<std::string> names;
    for (const Aggregate& a : c.aggregates) {
      if (a.key.tid != t.tid) continue;
      for (uint64_t ip : frames_of(*c.stacks, a.key.kern_stack_id))
        if (const KernelSymbol* s = kallsyms->find(ip)) names.insert(s->name);
    }
    return names;
  };
  auto plain_names = kernel_names(caps[0]), sched_names = kernel_names(caps[1]);
  EXPECT_FALSE(plain_names.count("schedule"));
  EXPECT_TRUE(sched_names.count("schedule"));
  EXPECT_TRUE(plain_names.count("anon_pipe_read"));
  EXPECT_TRUE(sched_names.count("anon_pipe_read"));
}

// With no task-work entry left for a thread, its kept block loses its deferred user stack,
// counted, and nothing else: one entry, two processes (wl_pipe's parent and child, whose
// memories differ, so the stack cannot be walked at switch-in) that both block for longer
// than --min-block. A thread's first kept block is deferred; later ones are walked at
// switch-out (its last block was kept), so one loss is expected, not one per block.
TEST(TaskWork, NoEntryLeftCostsTheUserStackOnlyCounted) {
  LoaderOptions one;
  one.min_block_ns = 1'000'000;
  one.user_work_entries = 1;
  one.rseq_user_stacks = false;
  std::vector<Capture> caps;
  Truth t;
  ASSERT_NO_FATAL_FAILURE(run_under("wl_pipe", {"-n", "10", "-m", "20"}, {one}, &caps, &t));
  const Capture& c = caps[0];
  ASSERT_NE(c.task_work, c.task_work_refused);
  uint64_t without = 0, truth_blocks = 0;
  for (const Aggregate& a : c.aggregates) {
    if (a.key.user_stack_id == -OFFWAKE_ERR_NO_TASK_WORK) without += a.value.count;
    if (a.key.tid == t.tid) truth_blocks += a.value.count;
  }
  EXPECT_GE(truth_blocks, t.count) << "blocks must all be kept";
  EXPECT_EQ(without, c.counters.user_work_failed);
  if (c.task_work_refused) {
    // No task work, so no entry to run out of: the sys_exit way takes every stack, a thread's
    // first kept block parked unless a longer block of the thread came before it (as in
    // Capture3.RseqTaskWorkAndSysExitTakeTheSameUserStacks).
    EXPECT_EQ(without, 0u);
    const uint64_t other = other_blocks_of_thread("wl_pipe", c, t);
    EXPECT_GT(c.counters.user_parked + late_blocks(c) + other, 0u)
        << c.counters.user_parked << " parked, " << late_blocks(c) << " ended late, " << other
        << " other blocks of the thread; its blocks:" << blocks_of_thread(c, t.tid);
    return;
  }
  EXPECT_GT(c.counters.user_work_failed, 0u);
  EXPECT_GT(c.counters.user_work_scheduled, 0u) << "the other process had the entry";
}

}  // namespace
}  // namespace offwake::bpf
