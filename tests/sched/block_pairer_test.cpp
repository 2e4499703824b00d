// BlockPairer: scheduler events in, blocks out, by the BPF programs' rules.
#include "sched/block_pairer.h"

#include "block_rules.h"

#include <gtest/gtest.h>

namespace offwake::sched {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSched = 0xffffffff82265000;  // "scheduler" frames: dropped from blocked stacks

Callchain chain(std::initializer_list<uint64_t> kernel, std::initializer_list<uint64_t> user) {
  Callchain c;
  for (uint64_t ip : kernel) c.push(ip, FrameContext::kKernel);
  for (uint64_t ip : user) c.push(ip, FrameContext::kUser);
  return c;
}

SchedEvent switch_ev(uint64_t t, uint32_t cpu, uint32_t prev, uint32_t prev_pid, uint32_t state, uint32_t next,
                     Callchain c = {}) {
  SchedEvent e;
  e.kind = SchedKind::kSwitch;
  e.time = t;
  e.cpu = cpu;
  e.pid = prev_pid;
  e.tid = prev;
  e.prev_tid = prev;
  e.prev_state = state;
  e.next_tid = next;
  e.prev_comm = "t" + std::to_string(prev);
  e.next_comm = "t" + std::to_string(next);
  e.callchain = std::move(c);
  return e;
}

SchedEvent waking_ev(uint64_t t, uint32_t cpu, uint32_t waker, uint32_t waker_pid, uint32_t target, uint32_t irq = 0,
                     Callchain c = {}) {
  SchedEvent e;
  e.kind = SchedKind::kWaking;
  e.time = t;
  e.cpu = cpu;
  e.pid = waker_pid;
  e.tid = waker;
  e.target_tid = target;
  e.irq = irq;
  e.callchain = std::move(c);
  return e;
}

PairerOptions options() {
  PairerOptions o;
  o.drop_leading_kernel = [](uint64_t ip) { return ip >= kSched && ip < kSched + 0x1000; };
  return o;
}

std::vector<uint64_t> frames(const BlockPairer& p, int64_t id) {
  auto f = p.lookup(static_cast<uint64_t>(id));
  EXPECT_TRUE(f.ok());
  return f.ok() ? std::vector<uint64_t>(f->begin(), f->end()) : std::vector<uint64_t>{};
}

// Thread 10 (process 10) blocks in read, thread 20 wakes it, it runs again 5 ms after blocking.
TEST(BlockPairer, SwitchOutWakingSwitchInIsOneBlockWithItsWaker) {
  BlockPairer p(options());
  p.add(switch_ev(100 * kMs, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0,
                  chain({kSched + 8, kSched + 16, 0xffffffff816e4063}, {0x401000, 0x402000})));
  p.add(switch_ev(101 * kMs, 1, 0, 0, 0, 20));
  p.add(waking_ev(104 * kMs, 1, 20, 20, 10, 0, chain({0xffffffff813b4986}, {0x403000})));
  p.add(switch_ev(105 * kMs, 0, 0, 0, 0, 10));
  ASSERT_EQ(p.aggregates().size(), 1u);
  const Aggregate& a = p.aggregates()[0];
  EXPECT_EQ(a.key.tid, 10u);
  EXPECT_EQ(a.key.tgid, 10u);
  EXPECT_EQ(a.key.state, OFFWAKE_STATE_INTERRUPTIBLE);
  EXPECT_EQ(frames(p, a.key.kern_stack_id), (std::vector<uint64_t>{0xffffffff816e4063}));
  EXPECT_EQ(frames(p, a.key.user_stack_id), (std::vector<uint64_t>{0x401000, 0x402000}));
  EXPECT_EQ(a.key.waker_tid, 20u);
  EXPECT_EQ(a.key.waker_flags, 0u);
  EXPECT_EQ(frames(p, a.key.waker_kern_stack_id), (std::vector<uint64_t>{0xffffffff813b4986}));
  EXPECT_EQ(frames(p, a.key.waker_user_stack_id), (std::vector<uint64_t>{0x403000}));
  EXPECT_STREQ(a.key.comm, "t10");
  EXPECT_STREQ(a.key.waker_comm, "t20");
  EXPECT_EQ(a.value.total_ns, 5 * kMs);
  EXPECT_EQ(a.value.count, 1u);
  EXPECT_EQ(a.value.last_ns, 104 * kMs);  // stamped with the wakeup
  EXPECT_EQ(p.counters().blocks, 1u);
  EXPECT_EQ(p.counters().wakeups, 1u);
}

// --call-graph dwarf: the user half of a stack the pairer keeps is completed (from the event's
// stack copy) before it is interned: a blocked thread's at its switch-out, a task waker's. Not
// for a preemption, an interrupt's waker, a kernel thread, or a block the filters drop (nor
// the waker of a running thread whose next block they would drop).
TEST(BlockPairer, CompletesTheUserHalfOfTheStacksItKeepsOnly) {
  PairerOptions o = options();
  o.tgids = {10, 40};
  o.is_kernel_thread = [](uint32_t tid) { return tid == 50; };
  std::vector<uint32_t> completed;
  o.complete_stack = [&](const SchedEvent& e, Callchain& c) {
    completed.push_back(e.tid);
    c.set_user_frames(std::vector<uint64_t>{0x500000 + e.tid, 0x600000});
  };
  BlockPairer p(o);
  p.add(switch_ev(0, 0, 30, 30, 0, 0, chain({1}, {2})));                            // preempted
  p.add(switch_ev(1 * kMs, 0, 31, 31, OFFWAKE_STATE_INTERRUPTIBLE, 1, chain({1}, {2})));  // not a target
  p.add(switch_ev(1 * kMs + 1, 1, 0, 0, 0, 31));
  p.add(waking_ev(1 * kMs + 2, 0, 20, 20, 31, 0, chain({3}, {})));  // on its way in: not kept
  p.add(switch_ev(2 * kMs, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {})));
  p.add(waking_ev(3 * kMs, 1, 20, 20, 10, 0, chain({3}, {})));
  p.add(switch_ev(4 * kMs, 0, 0, 0, 0, 10));
  p.add(switch_ev(5 * kMs, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {})));
  p.add(waking_ev(6 * kMs, 1, 30, 30, 10, OFFWAKE_WAKER_HARDIRQ, chain({5}, {7})));  // an interrupt
  p.add(switch_ev(7 * kMs, 0, 0, 0, 0, 10));
  p.add(switch_ev(8 * kMs, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {})));
  p.add(waking_ev(9 * kMs, 1, 50, 0, 10, 0, chain({6}, {})));  // a kernel thread
  p.add(switch_ev(10 * kMs, 0, 0, 0, 0, 10));
  EXPECT_EQ(completed, (std::vector<uint32_t>{10, 20, 10, 10}));
  ASSERT_EQ(p.aggregates().size(), 3u);
  const offwake_key& k = p.aggregates()[0].key;
  EXPECT_EQ(frames(p, k.user_stack_id), (std::vector<uint64_t>{0x50000a, 0x600000}));
  EXPECT_EQ(frames(p, k.waker_user_stack_id), (std::vector<uint64_t>{0x500014, 0x600000}));
  EXPECT_EQ(frames(p, k.kern_stack_id), (std::vector<uint64_t>{1}));
  EXPECT_EQ(p.aggregates()[1].key.waker_user_stack_id, OFFWAKE_NO_STACK);
  EXPECT_EQ(p.aggregates()[2].key.waker_user_stack_id, kNoStack);
}

TEST(BlockPairer, SameStacksSumAndFiltersDrop) {
  PairerOptions o = options();
  o.min_block_ns = 2 * kMs;
  BlockPairer p(o);
  uint64_t t = 0;
  for (uint64_t len : {1 * kMs, 3 * kMs, 4 * kMs}) {
    p.add(switch_ev(t, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
    p.add(waking_ev(t + len, 1, 20, 20, 10, 0, chain({3}, {4})));
    p.add(switch_ev(t + len, 0, 0, 0, 0, 10));
    t += 10 * kMs;
  }
  ASSERT_EQ(p.aggregates().size(), 1u);
  EXPECT_EQ(p.aggregates()[0].value.count, 2u);
  EXPECT_EQ(p.aggregates()[0].value.total_ns, 7 * kMs);
  EXPECT_EQ(p.aggregates()[0].value.max_ns, 4 * kMs);
  EXPECT_EQ(p.counters().filtered, 1u);
}

TEST(BlockPairer, InterruptWakersAreTheirContext) {
  BlockPairer p(options());
  p.add(switch_ev(0, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  // Task 30 was interrupted; the timer interrupt woke 10.
  p.add(waking_ev(3 * kMs, 1, 30, 30, 10, OFFWAKE_WAKER_HARDIRQ, chain({5, 6}, {7})));
  p.add(switch_ev(4 * kMs, 0, 0, 0, 0, 10));
  ASSERT_EQ(p.aggregates().size(), 1u);
  const offwake_key& k = p.aggregates()[0].key;
  EXPECT_EQ(k.waker_flags, OFFWAKE_WAKER_HARDIRQ);
  EXPECT_EQ(k.waker_tid, 0u);
  EXPECT_EQ(k.waker_user_stack_id, OFFWAKE_NO_STACK);
  EXPECT_STREQ(k.waker_comm, "[hardirq]");
  EXPECT_EQ(frames(p, k.waker_kern_stack_id), (std::vector<uint64_t>{5, 6}));
  EXPECT_EQ(p.counters().irq_wakeups, 1u);
}

// A wakeup in a softirq: the softirq context's when an interrupt's entry stub is in the
// callchain (the softirq ran at its end) or a kernel thread ran it (ksoftirqd); the task's
// own (its flag, its thread and both its stacks) when the task ran it itself, as a sender over
// loopback does (offwake_softirq_is_tasks).
TEST(BlockPairer, ASoftirqTheTaskRanIsTheTasks) {
  constexpr uint64_t kStub = 0xffffffff81000900;  // an interrupt's entry stub (asm_*)
  struct Case {
    const char* what;
    Callchain waker;
    bool kthread;
    uint32_t flags;
  } cases[] = {
      {"the sender's own softirq", chain({5, 6}, {7}), false, OFFWAKE_WAKER_OWN_SOFTIRQ},
      {"at an interrupt's end", chain({5, kStub, 6}, {7}), false, OFFWAKE_WAKER_SOFTIRQ},
      {"in ksoftirqd", chain({5, 6}, {}), true, OFFWAKE_WAKER_SOFTIRQ},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PairerOptions o = options();
    o.is_interrupt_entry = [](uint64_t ip) { return ip == kStub; };
    o.is_kernel_thread = [&c](uint32_t tid) { return tid == 30 && c.kthread; };
    BlockPairer p(o);
    p.add(switch_ev(0, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
    p.add(waking_ev(3 * kMs, 1, 30, 30, 10, OFFWAKE_WAKER_SOFTIRQ, c.waker));
    p.add(switch_ev(4 * kMs, 0, 0, 0, 0, 10));
    ASSERT_EQ(p.aggregates().size(), 1u);
    const offwake_key& k = p.aggregates()[0].key;
    EXPECT_EQ(k.waker_flags, c.flags);
    if (c.flags == OFFWAKE_WAKER_OWN_SOFTIRQ) {
      EXPECT_EQ(k.waker_tid, 30u);
      EXPECT_EQ(frames(p, k.waker_kern_stack_id), (std::vector<uint64_t>{5, 6}));
      EXPECT_EQ(frames(p, k.waker_user_stack_id), (std::vector<uint64_t>{7}));
      EXPECT_EQ(p.counters().irq_wakeups, 0u);
    } else {
      EXPECT_EQ(k.waker_tid, 0u);
      EXPECT_STREQ(k.waker_comm, "[softirq]");
      EXPECT_EQ(k.waker_user_stack_id, OFFWAKE_NO_STACK);
      EXPECT_EQ(p.counters().irq_wakeups, 1u);
    }
  }
}

TEST(BlockPairer, PreemptionIsNotABlockAndStatesAreFiltered) {
  PairerOptions o = options();
  o.state_mask = OFFWAKE_WANT_D;
  BlockPairer p(o);
  p.add(switch_ev(0, 0, 10, 10, 0, 11));                            // preempted
  p.add(switch_ev(1 * kMs, 0, 11, 11, OFFWAKE_STATE_INTERRUPTIBLE, 10));  // S, not wanted
  p.add(switch_ev(2 * kMs, 0, 10, 10, OFFWAKE_STATE_UNINTERRUPTIBLE, 11, chain({1}, {2})));
  p.add(waking_ev(5 * kMs, 1, 0, 0, 10, OFFWAKE_WAKER_SOFTIRQ, chain({9}, {})));
  p.add(switch_ev(6 * kMs, 0, 11, 11, 0, 10));
  ASSERT_EQ(p.aggregates().size(), 1u);
  EXPECT_EQ(p.aggregates()[0].key.tid, 10u);
  EXPECT_EQ(p.aggregates()[0].key.state, OFFWAKE_STATE_UNINTERRUPTIBLE);
  EXPECT_EQ(p.aggregates()[0].value.total_ns, 4 * kMs);
}

// The state a block is stored with is one state, as the sched_switch tracepoint reports it
// (block_rules.h, offwake_block_state), whichever back end recorded it: the BPF programs get
// the scheduler's raw value (0x2001 for a freezable interruptible sleep, which they stored as
// it was), the tracepoint back end a value the kernel reduced already (0x1).
TEST(BlockState, OneStateAsTheSchedSwitchTracepointReportsIt) {
  EXPECT_EQ(offwake_block_state(0x1), 0x1u);
  EXPECT_EQ(offwake_block_state(0x2001), 0x1u);   // TASK_INTERRUPTIBLE | TASK_FREEZABLE
  EXPECT_EQ(offwake_block_state(0x2), 0x2u);
  EXPECT_EQ(offwake_block_state(0x102), 0x2u);    // TASK_KILLABLE
  EXPECT_EQ(offwake_block_state(0x2102), 0x2u);   // TASK_KILLABLE | TASK_FREEZABLE (a vfork parent)
  EXPECT_EQ(offwake_block_state(0x402), 0x402u);  // TASK_IDLE: "I"
  EXPECT_EQ(offwake_block_state(0x2402), 0x2u);   // not TASK_IDLE exactly: the tracepoint says D
  EXPECT_EQ(offwake_block_state(0x1000), 0x2u);   // TASK_RTLOCK_WAIT: D
  EXPECT_EQ(offwake_block_state(0x0), 0x0u);      // running
  EXPECT_EQ(offwake_block_state(0x4), 0x4u);      // stopped: no block
  EXPECT_EQ(offwake_block_state(0x40), 0x40u);    // parked: no block
  EXPECT_EQ(offwake_block_state(0x800), 0x0u);    // TASK_NEW alone reports nothing
  // What the sched decoder gives the pairer is left as it is.
  for (uint32_t s : {OFFWAKE_STATE_INTERRUPTIBLE, OFFWAKE_STATE_UNINTERRUPTIBLE,
                     OFFWAKE_STATE_UNINTERRUPTIBLE | OFFWAKE_STATE_NOLOAD, 0x4u, 0u})
    EXPECT_EQ(offwake_block_state(s), s);
  // The pairer stores the reduced state and filters by it.
  PairerOptions o = options();
  o.state_mask = OFFWAKE_WANT_S;
  BlockPairer p(o);
  p.add(switch_ev(0, 0, 10, 10, 0x2001, 11, chain({1}, {2})));
  p.add(waking_ev(5 * kMs, 1, 20, 20, 10, 0, chain({3}, {4})));
  p.add(switch_ev(6 * kMs, 0, 11, 11, 0, 10));
  ASSERT_EQ(p.aggregates().size(), 1u);
  EXPECT_EQ(p.aggregates()[0].key.state, OFFWAKE_STATE_INTERRUPTIBLE);
}

TEST(BlockPairer, MissingWakeupAndMissingSwitchInAreCounted) {
  BlockPairer p(options());
  // No wakeup seen.
  p.add(switch_ev(0, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(switch_ev(2 * kMs, 0, 0, 0, 0, 10));
  // Woken at 5 ms, but its switch-in is not seen: it switches out again at 9 ms.
  p.add(switch_ev(3 * kMs, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(waking_ev(5 * kMs, 1, 20, 20, 10, 0, chain({3}, {4})));
  p.add(switch_ev(9 * kMs, 1, 10, 10, 0, 0));
  EXPECT_EQ(p.counters().missed_wakeups, 1u);
  EXPECT_EQ(p.counters().late_ends, 1u);
  uint64_t with_waker = 0, without = 0;
  for (const auto& a : p.aggregates()) (a.key.waker_tid == 20 ? with_waker : without) += a.value.total_ns;
  EXPECT_EQ(with_waker, 2 * kMs);  // ended at its wakeup
  EXPECT_EQ(without, 2 * kMs);
}

TEST(BlockPairer, FiltersOnProcessesFollowForksAndCountStillBlocked) {
  PairerOptions o = options();
  o.tgids = {10};
  o.follow_forks = true;
  BlockPairer p(o);
  p.add(switch_ev(0, 0, 50, 50, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));  // not a target
  p.add(switch_ev(1 * kMs, 1, 11, 11, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));  // not yet
  p.fork(10, 11);
  p.add(switch_ev(2 * kMs, 0, 0, 0, 0, 50));
  p.add(switch_ev(3 * kMs, 1, 0, 0, 0, 11));
  EXPECT_TRUE(p.aggregates().empty());
  p.add(switch_ev(4 * kMs, 1, 11, 11, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.finish(10 * kMs);
  ASSERT_EQ(p.aggregates().size(), 1u);
  EXPECT_EQ(p.aggregates()[0].key.tid, 11u);
  EXPECT_EQ(p.aggregates()[0].key.waker_flags, OFFWAKE_WAKER_STILL_BLOCKED);
  EXPECT_EQ(p.aggregates()[0].value.total_ns, 6 * kMs);
  EXPECT_EQ(p.counters().still_blocked, 1u);
  EXPECT_EQ(p.counters().forks_followed, 1u);
}

TEST(BlockPairer, ExecStartsANewIdentityAndTimelineSendsEachBlock) {
  std::vector<offwake_event> sent;
  PairerOptions o = options();
  o.timeline = [&](const offwake_event& e) { sent.push_back(e); };
  BlockPairer p(o);
  for (int i = 0; i < 2; ++i) {
    const uint64_t t = static_cast<uint64_t>(i) * 10 * kMs;
    p.add(switch_ev(t, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
    p.add(waking_ev(t + 2 * kMs, 1, 20, 20, 10, 0, chain({3}, {4})));
    p.add(switch_ev(t + 3 * kMs, 2, 0, 0, 0, 10));
    if (i == 0) p.exec(10);
  }
  EXPECT_TRUE(p.aggregates().empty());
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_NE(sent[0].key.ident, sent[1].key.ident);
  EXPECT_EQ(sent[1].start_ns, 10 * kMs);
  EXPECT_EQ(sent[1].end_ns, 13 * kMs);
  EXPECT_EQ(sent[1].stamp_ns, 12 * kMs);
  EXPECT_EQ(sent[1].cpu, 2u);
}

// A wakeup that comes while the task is still on its way into the scheduler belongs to the
// block its switch-out starts.
TEST(BlockPairer, WakeupBeforeTheSwitchOutBelongsToThatBlock) {
  BlockPairer p(options());
  p.add(switch_ev(0, 0, 0, 0, 0, 10));  // 10 runs on CPU 0
  p.add(waking_ev(1 * kMs, 1, 20, 20, 10, 0, chain({3}, {4})));
  p.add(switch_ev(1 * kMs + 1000, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(switch_ev(2 * kMs, 0, 0, 0, 0, 10));
  ASSERT_EQ(p.aggregates().size(), 1u);
  EXPECT_EQ(p.aggregates()[0].key.waker_tid, 20u);
}

// Woken on its way into a block (before its switch-out), then run again without a traced
// switch-in: that wakeup was this block's, which ends late with it at its start (it never
// slept), and is used up there. The next block, whose switch-out ends it, never takes that
// waker: it was woken by nobody seen, up to its switch-in.
TEST(BlockPairer, AWakeupOnTheWayInEndsItsBlockLateAndNoOtherBlock) {
  std::vector<offwake_event> sent;
  PairerOptions o = options();
  o.timeline = [&](const offwake_event& e) { sent.push_back(e); };
  BlockPairer p(o);
  p.add(switch_ev(0, 0, 0, 0, 0, 10));  // 10 runs on CPU 0
  p.add(waking_ev(1 * kMs, 1, 20, 20, 10, 0, chain({3}, {4})));
  p.add(switch_ev(1 * kMs + 1000, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  // Its switch-in is not seen; it blocks again at 4 ms, and is switched in at 9 ms.
  p.add(switch_ev(4 * kMs, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(switch_ev(9 * kMs, 0, 0, 0, 0, 10));
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].key.waker_tid, 20u);
  EXPECT_EQ(sent[0].start_ns, 1 * kMs + 1000);
  EXPECT_EQ(sent[0].end_ns, 1 * kMs + 1000);
  EXPECT_EQ(sent[1].key.waker_flags, OFFWAKE_WAKER_NONE);
  EXPECT_EQ(sent[1].key.waker_tid, 0u);
  EXPECT_EQ(sent[1].end_ns, 9 * kMs);
  EXPECT_EQ(p.counters().late_ends, 1u);
  EXPECT_EQ(p.counters().missed_wakeups, 1u);
}

// A thread's last block whose switch-in is not traced (the CPU it ran on idled): it exits with
// the block still open. The block ends there, late, as when the thread is next seen switching
// out, and is counted; it does not vanish with the thread. The times are a vfork child's:
// switched out at .479393, woken by the timer at .481425, exited at .481471.
TEST(BlockPairer, AThreadThatExitsWithItsBlockOpenEndsItLate) {
  std::vector<offwake_event> sent;
  PairerOptions o = options();
  o.timeline = [&](const offwake_event& e) { sent.push_back(e); };
  BlockPairer p(o);
  constexpr uint64_t kOut = 479'393'000, kWoken = 481'425'000, kExit = 481'471'000;
  p.add(switch_ev(kOut, 1, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(waking_ev(kWoken, 1, 0, 0, 10, OFFWAKE_WAKER_HARDIRQ, chain({5}, {})));
  p.exit(10, kExit, 1);
  // Woken, never seen running, gone: no wakeup, ended at the exit.
  p.add(switch_ev(kExit + 1 * kMs, 0, 11, 11, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.exit(11, kExit + 3 * kMs, 0);
  // The tid comes back as another thread with nothing open: its switch-in ends nothing.
  p.add(switch_ev(kExit + 4 * kMs, 0, 0, 0, 0, 10));
  p.finish(kExit + 5 * kMs);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].key.tid, 10u);
  EXPECT_EQ(sent[0].start_ns, kOut);
  EXPECT_EQ(sent[0].end_ns, kWoken);  // ended at its wakeup, the best bound there is
  EXPECT_EQ(sent[0].key.waker_flags, OFFWAKE_WAKER_HARDIRQ);
  EXPECT_EQ(sent[0].cpu, 1u);
  EXPECT_EQ(sent[1].key.tid, 11u);
  EXPECT_EQ(sent[1].end_ns, kExit + 3 * kMs);  // no wakeup seen: up to the exit
  EXPECT_EQ(sent[1].key.waker_flags, OFFWAKE_WAKER_NONE);
  EXPECT_EQ(p.counters().blocks, 2u);
  EXPECT_EQ(p.counters().late_ends, 2u);
  EXPECT_EQ(p.counters().missed_wakeups, 1u);
  EXPECT_EQ(p.counters().still_blocked, 0u);
}

// A thread that exits after its block ended normally ends nothing more.
TEST(BlockPairer, AnExitAfterTheSwitchInEndsNothing) {
  BlockPairer p(options());
  p.add(switch_ev(0, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(waking_ev(2 * kMs, 1, 20, 20, 10, 0, chain({3}, {4})));
  p.add(switch_ev(3 * kMs, 0, 0, 0, 0, 10));
  p.exit(10, 4 * kMs, 0);
  ASSERT_EQ(p.aggregates().size(), 1u);
  EXPECT_EQ(p.aggregates()[0].value.total_ns, 3 * kMs);
  EXPECT_EQ(p.counters().blocks, 1u);
  EXPECT_EQ(p.counters().late_ends, 0u);
}

// The kernel gave no event for CPU 1's switch from idle to thread 10 (this kind of VM does
// that): the next switch of that CPU is away from a task it was not seen to switch to. Counted,
// and the block of 10 ends late, at its wakeup.
TEST(BlockPairer, ASwitchTheKernelDidNotTraceIsCounted) {
  PairerOptions o = options();
  o.every_switch = true;
  BlockPairer p(o);
  p.add(switch_ev(0, 1, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(waking_ev(2 * kMs, 0, 20, 20, 10, 0, chain({3}, {4})));
  // (untraced: CPU 1 switches from idle to 10 at 2.1 ms)
  p.add(switch_ev(5 * kMs, 1, 10, 10, 0, 0));
  p.add(switch_ev(6 * kMs, 0, 20, 20, 0, 0));  // CPU 0's first switch: nothing to compare with
  EXPECT_EQ(p.counters().untraced_switches, 1u);
  EXPECT_EQ(p.counters().late_ends, 1u);
  ASSERT_EQ(p.aggregates().size(), 1u);
  EXPECT_EQ(p.aggregates()[0].value.total_ns, 2 * kMs);
  EXPECT_EQ(p.aggregates()[0].key.waker_tid, 20u);
  // A per-task recording (perf offwake convert of perf record -p) sees a CPU's switches of its
  // tasks only: no such count there.
  BlockPairer q(options());
  q.add(switch_ev(0, 1, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  q.add(switch_ev(5 * kMs, 1, 11, 11, 0, 0));
  EXPECT_EQ(q.counters().untraced_switches, 0u);
}


// Records lost from a ring buffer (the tracepoint back end under load): a block open then, or
// starting meanwhile, may lose its switch-in or its wakeup. Thread 10's switch-in and its next
// switch-out were lost; without the loss its block would end at its next switch-out seen, 300
// ms later, with the next block's waker. 12's wakeup was lost: its block would have no waker.
// Both are dropped and counted, with their time up to the loss; a block that starts after
// the loss is whole; nothing counts the CPUs' switches as untraced.
TEST(BlockPairer, BlocksOpenAtALossAreDroppedAndCounted) {
  PairerOptions o = options();
  o.every_switch = true;
  BlockPairer p(o);
  p.add(switch_ev(0, 1, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(switch_ev(1 * kMs, 0, 11, 11, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(waking_ev(2 * kMs, 0, 20, 20, 11, 0, chain({3}, {4})));
  // (lost from 4 ms: 10 woken and switched in at 5 ms on CPU 1, running until it blocks at
  // 290 ms; 12 blocks at 6 ms, seen, is woken unseen and switched in at 7 ms, seen)
  p.loss_begins(4 * kMs);
  p.add(switch_ev(6 * kMs, 0, 12, 12, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(switch_ev(7 * kMs, 0, 0, 0, 0, 12));
  p.loss_ends();
  p.add(switch_ev(290 * kMs, 1, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({1}, {2})));
  p.add(waking_ev(299 * kMs, 0, 21, 21, 10, 0, chain({3}, {4})));
  p.add(switch_ev(300 * kMs, 1, 0, 0, 0, 10));
  p.add(switch_ev(301 * kMs, 0, 0, 0, 0, 11));  // 11's switch-in, its wakeup forgotten at the loss
  p.finish(400 * kMs);
  EXPECT_EQ(p.counters().ringbuf_drops, 3u);  // 10 and 11 open at the loss, 12 starting in it
  EXPECT_EQ(p.counters().ringbuf_drops_ns, 4 * kMs + 3 * kMs);
  EXPECT_EQ(p.counters().late_ends, 0u);
  EXPECT_EQ(p.counters().untraced_switches, 0u);
  ASSERT_EQ(p.aggregates().size(), 1u);
  EXPECT_EQ(p.aggregates()[0].key.tid, 10u);
  EXPECT_EQ(p.aggregates()[0].value.total_ns, 10 * kMs);
  EXPECT_EQ(p.aggregates()[0].key.waker_tid, 21u);
}


// --sample-period (block_rules.h): the threshold is uniform below the period, never below
// --min-block; a kept block weighs the period when it is shorter.
TEST(SamplingRules, ThresholdAndWeight) {
  EXPECT_EQ(offwake_keep_threshold(0, 0, 12345), 0u);
  EXPECT_EQ(offwake_keep_threshold(7, 0, 12345), 7u);
  // 32 random bits scaled to the period: floor(random * P / 2^32).
  EXPECT_EQ(offwake_keep_threshold(0, 1000, 0), 0u);
  EXPECT_EQ(offwake_keep_threshold(0, 1000, 0x80000000u), 500u);
  EXPECT_EQ(offwake_keep_threshold(0, 1000, 0xffffffffu), 999u);
  EXPECT_EQ(offwake_keep_threshold(400, 1000, 0x40000000u), 400u);
  EXPECT_EQ(offwake_keep_threshold(400, 1000, 0xc0000000u), 750u);
  // A period past 32 bits: no overflow, still below the period.
  EXPECT_EQ(offwake_keep_threshold(0, 100000000000ull, 0x80000000u), 50000000000ull);
  EXPECT_EQ(offwake_keep_threshold(0, 100000000000ull, 0xffffffffu), 100000000000ull - 24);
  EXPECT_EQ(offwake_block_weight(300, 1000), 1000u);
  EXPECT_EQ(offwake_block_weight(1000, 1000), 1000u);
  EXPECT_EQ(offwake_block_weight(2500, 1000), 2500u);
  EXPECT_EQ(offwake_block_weight(300, 0), 300u);
  EXPECT_FALSE(offwake_lazy_capture(0, 0, 0, 0));
  EXPECT_TRUE(offwake_lazy_capture(0, 0, 0, 1000));
  EXPECT_FALSE(offwake_lazy_capture(1, 0, 0, 1000));
}

// Blocks of 100 us, sampled at 1 ms: about one in ten is kept, each weighing 1 ms, so the total
// estimates the truth; a 3 ms block is always kept, at its length; every block not kept is
// counted, none as filtered.
TEST(BlockPairer, SamplingKeepsBlocksByTheirLengthAndWeighsThemThePeriod) {
  PairerOptions o = options();
  o.sample_period_ns = kMs;
  BlockPairer p(o);
  constexpr int kBlocks = 20000;
  constexpr uint64_t kUs = 1000;
  uint64_t t = 100 * kMs;
  for (int i = 0; i < kBlocks; ++i) {
    p.add(switch_ev(t, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({0xffffffff816e4063}, {0x401000})));
    p.add(waking_ev(t + 90 * kUs, 1, 20, 20, 10, 0, chain({0xffffffff813b4986}, {0x403000})));
    p.add(switch_ev(t + 100 * kUs, 0, 0, 0, 0, 10));
    t += 200 * kUs;
  }
  p.add(switch_ev(t, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0, chain({0xffffffff816e4063}, {0x402000})));
  p.add(switch_ev(t + 3 * kMs, 0, 0, 0, 0, 10));
  uint64_t kept = 0, total = 0, sampled = 0, sampled_ns = 0, long_total = 0;
  for (const Aggregate& a : p.aggregates()) {
    if (frames(p, a.key.user_stack_id) == std::vector<uint64_t>{0x402000}) {
      long_total += a.value.total_ns;
      EXPECT_EQ(a.value.count, 1u);
      EXPECT_EQ(a.value.sampled, 0u);
      continue;
    }
    kept += a.value.count;
    total += a.value.total_ns;
    sampled += a.value.sampled;
    sampled_ns += a.value.sampled_ns;
  }
  EXPECT_EQ(long_total, 3 * kMs);
  EXPECT_EQ(sampled, kept);
  EXPECT_EQ(total, kept * kMs);
  EXPECT_EQ(sampled_ns, kept * 100 * kUs);
  // Binomial(20000, 0.1): mean 2000, standard deviation 42.
  EXPECT_NEAR(static_cast<double>(kept), 2000.0, 6 * 42.0);
  EXPECT_NEAR(static_cast<double>(total), kBlocks * 100.0 * kUs, 6 * 42.0 * kMs);
  EXPECT_EQ(p.counters().blocks, kept + 1);
  EXPECT_EQ(p.counters().sample_weighted, kept);
  EXPECT_EQ(p.counters().sample_dropped, kBlocks - kept);
  EXPECT_EQ(p.counters().filtered, 0u);
}

// --min-block applies before the draw: a block below it is filtered, never sampled.
TEST(BlockPairer, MinBlockFiltersBeforeSampling) {
  PairerOptions o = options();
  o.sample_period_ns = kMs;
  o.min_block_ns = kMs / 2;
  BlockPairer p(o);
  uint64_t t = 100 * kMs;
  for (int i = 0; i < 100; ++i) {
    p.add(switch_ev(t, 0, 10, 10, OFFWAKE_STATE_INTERRUPTIBLE, 0));
    p.add(switch_ev(t + kMs / 4, 0, 0, 0, 0, 10));
    t += kMs;
  }
  EXPECT_EQ(p.counters().filtered, 100u);
  EXPECT_EQ(p.counters().sample_dropped, 0u);
  EXPECT_TRUE(p.aggregates().empty());
}

}  // namespace
}  // namespace offwake::sched
