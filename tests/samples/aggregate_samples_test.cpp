// Where a BPF aggregate becomes perf samples: stack ids through the one Callchain type into an
// offwake-time sample and its offwake-waker sample. No privileges needed.
#include "samples/aggregate_samples.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>

#include "support/run.h"
#include "support/stack_table.h"

namespace offwake {
namespace {

using test::StackTable;

constexpr uint64_t kTraceiter = 0xffffffff81000100, kSchedule = 0xffffffff81000200,
                   kWakeUp = 0xffffffff81000300;

Kallsyms test_kallsyms(const test::TempDir& dir) {
  const std::string path = dir.file("kallsyms");
  std::ofstream(path) << "ffffffff81000000 T _text\n"
                         "ffffffff81000100 T __traceiter_sched_switch\n"
                         "ffffffff81000200 T __schedule\n"
                         "ffffffff81000300 T try_to_wake_up\n"
                         "ffffffff81000380 T sysvec_apic_timer_interrupt\n"
                         "ffffffff81000400 T asm_sysvec_apic_timer_interrupt\n"
                         "ffffffff81000500 T copy_page\n";
  return Kallsyms::load(path).value();
}

Aggregate aggregate(uint32_t waker_flags) {
  Aggregate a{};
  std::memset(&a.key, 0, sizeof a.key);
  a.key.tgid = 100;
  a.key.tid = 101;
  a.key.kern_stack_id = 1;
  a.key.user_stack_id = 2;
  a.key.waker_flags = waker_flags;
  a.key.waker_tgid = 200;
  a.key.waker_tid = 202;
  a.key.waker_kern_stack_id = 3;
  a.key.waker_user_stack_id = kNoStack;
  a.value.total_ns = 123456789;
  a.value.count = 7;
  return a;
}

class AggregateSamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    table.stacks[1] = {kTraceiter + 8, kSchedule + 4, 0};
    table.stacks[2] = {0x401000, 0x402000};
    table.stacks[3] = {kTraceiter + 8, kWakeUp + 4};
  }
  test::TempDir dir;
  StackTable table;
  OffwakeEventIds ids{1000, 1001};
};

TEST_F(AggregateSamplesTest, BlockedSampleCarriesThreadStacksAndNanoseconds) {
  Kallsyms k = test_kallsyms(dir);
  AggregateSamples convert(table, ids, &k);
  auto samples = convert.convert(aggregate(0), 5555);
  ASSERT_EQ(samples.size(), 2u);
  const auto& blocked = samples[0];
  const auto& waker = samples[1];
  EXPECT_EQ(blocked.id, 1000u);
  EXPECT_EQ(blocked.pid, 100u);
  EXPECT_EQ(blocked.tid, 101u);
  EXPECT_EQ(blocked.time, 5555u);
  EXPECT_EQ(blocked.period, 123456789u);
  Callchain want;
  want.push(kSchedule + 4, FrameContext::kKernel);  // __traceiter_* dropped
  want.push(0x401000, FrameContext::kUser);
  want.push(0x402000, FrameContext::kUser);
  EXPECT_EQ(blocked.callchain, want);
  EXPECT_EQ(blocked.ip, kSchedule + 4);

  EXPECT_EQ(waker.id, 1001u);
  EXPECT_EQ(waker.pid, 200u);
  EXPECT_EQ(waker.tid, 202u);
  EXPECT_EQ(waker.period, blocked.period);
  EXPECT_EQ(waker.time, blocked.time);
  ASSERT_EQ(waker.callchain.size(), 1u);
  EXPECT_EQ(waker.callchain.frames()[0].ip, kWakeUp + 4);
}

TEST_F(AggregateSamplesTest, WithoutKallsymsNothingIsDropped) {
  AggregateSamples convert(table, ids);
  auto samples = convert.convert(aggregate(0), 1);
  const auto& blocked = samples.at(0);
  const auto& waker = samples.at(1);
  EXPECT_EQ(blocked.callchain.count(FrameContext::kKernel), 2u);
  EXPECT_EQ(waker.callchain.count(FrameContext::kKernel), 2u);
}

TEST_F(AggregateSamplesTest, InterruptAndUnknownWakersGetNamedPseudoThreads) {
  AggregateSamples convert(table, ids);
  EXPECT_EQ(convert.convert(aggregate(OFFWAKE_WAKER_HARDIRQ), 1).at(1).tid, kHardirqWaker.tid);
  EXPECT_EQ(convert.convert(aggregate(OFFWAKE_WAKER_SOFTIRQ), 1).at(1).tid, kSoftirqWaker.tid);
  EXPECT_EQ(convert.convert(aggregate(OFFWAKE_WAKER_NMI), 1).at(1).tid, kNmiWaker.tid);
  auto none = convert.convert(aggregate(OFFWAKE_WAKER_NONE), 1).at(1);
  EXPECT_EQ(none.pid, kUnknownWaker.tid);
  EXPECT_EQ(none.tid, kUnknownWaker.tid);
  // A kernel-thread waker is a real thread.
  EXPECT_EQ(convert.convert(aggregate(OFFWAKE_WAKER_KTHREAD), 1).at(1).tid, 202u);
  for (const PseudoWaker& p : kPseudoWakers) EXPECT_GT(p.tid, 4194304u) << "above PID_MAX_LIMIT";
}

TEST_F(AggregateSamplesTest, MissingStacksAreCountedPerHalf) {
  AggregateSamples convert(table, ids);
  Aggregate a = aggregate(0);
  a.key.user_stack_id = -EFAULT;
  a.key.kern_stack_id = 99;  // gone from the map
  auto samples = convert.convert(a, 1);
  const auto& blocked = samples.at(0);
  EXPECT_TRUE(blocked.callchain.empty());
  EXPECT_EQ(convert.user_losses().walk_failed, 1u);
  EXPECT_EQ(convert.kernel_losses().lookup_failed, 1u);
  EXPECT_EQ(blocked.ip, 0u);
}

// An interrupt's waker stack ends at the interrupt's handler entry, above its entry stub
// (asm_*): the code it interrupted woke nobody. A thread waker keeps its whole stack.
TEST_F(AggregateSamplesTest, InterruptWakerStacksEndAtTheInterruptEntry) {
  Kallsyms k = test_kallsyms(dir);
  table.stacks[4] = {kWakeUp + 4, 0xffffffff81000388, 0xffffffff81000408, 0xffffffff81000510};
  AggregateSamples convert(table, ids, &k);
  Aggregate irq = aggregate(OFFWAKE_WAKER_HARDIRQ);
  irq.key.waker_kern_stack_id = 4;
  const auto irq_samples = convert.convert(irq, 1);
  const Callchain& cut = irq_samples.at(1).callchain;
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_EQ(cut.frames()[1].ip, 0xffffffff81000388u);
  Aggregate thread = aggregate(0);
  thread.key.waker_kern_stack_id = 4;
  EXPECT_EQ(convert.convert(thread, 1).at(1).callchain.size(), 4u);
}

}  // namespace
}  // namespace offwake
