// The seed inputs of the param_dict fuzz target (param-dict-fuzz-corpus/): recordings that
// AggregateSamples and PerfDataWriter make, as perf offwake record does, from fixed aggregates
// with wakeup chains of every ending, a group cut short, a stray hop sample, threads, a fork,
// mappings of libc and the kernel (kernel addresses in param_dict_fuzz.kallsyms), rounds.
// A real recording holds every process of the machine and is too big for a seed. This test
// checks that the seeds are still the writer's output; OFFWAKE_REGENERATE_GOLDEN=1 rewrites
// them (never edit them by hand).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "../perfdata/fixtures.h"
#include "perfdata/reader.h"
#include "samples/aggregate_samples.h"
#include "report/sample_stream.h"
#include "support/stack_table.h"

#include "support/golden_file.h"

namespace offwake {
namespace {

using perfdata::Bytes;
using perfdata::Mode;
using perfdata::Record;

const std::string kCorpus = OFFWAKE_SOURCE_DIR "/tests/script/param-dict-fuzz-corpus/";

constexpr uint32_t kFirst = 301, kSecond = 302, kThird = 303, kChild = 304;
constexpr uint64_t kLibc = 0x7f1000000000;  // where libc is mapped in every process
constexpr uint64_t kExe = 0x55d000000000;   // and /usr/bin/true

// Stack ids: kernel stacks (addresses of param_dict_fuzz.kallsyms) and user stacks (libc's
// read, write, nanosleep and pthread_cond_wait, called from the executable).
enum StackId : int64_t {
  kReadKernel = 1, kReadUser, kWriteKernel, kWriteUser, kFutexKernel, kFutexUser,
  kWakeFutexKernel, kNapKernel, kNapUser, kIrqKernel, kModuleKernel,
};

test::StackTable stacks() {
  test::StackTable t;
  t.stacks[kReadKernel] = {0xffffffff81004010, 0xffffffff81003020, 0xffffffff81002030, 0xffffffff81001040,
                           0xffffffff81000110};
  t.stacks[kReadUser] = {kLibc + 0xf82b0, kExe + 0x1234, kLibc + 0x272d0};
  t.stacks[kWriteKernel] = {0xffffffff81005410, 0xffffffff81005210, 0xffffffff81005010, 0xffffffff81004410,
                            0xffffffff81003410, 0xffffffff81002410, 0xffffffff81001040};
  t.stacks[kWriteUser] = {kLibc + 0xf8350, kExe + 0x1300};
  t.stacks[kFutexKernel] = {0xffffffff81006210, 0xffffffff81006010, 0xffffffff81001040};
  t.stacks[kFutexUser] = {kLibc + 0x88410, kExe + 0x1400, kLibc + 0x272d0};
  t.stacks[kWakeFutexKernel] = {0xffffffff81005410, 0xffffffff81006410, 0xffffffff81006010, 0xffffffff81001040};
  t.stacks[kNapKernel] = {0xffffffff81007010, 0xffffffff81007210, 0xffffffff81007410, 0xffffffff81001040};
  t.stacks[kNapUser] = {kLibc + 0xd3e48, kExe + 0x1500};
  t.stacks[kIrqKernel] = {0xffffffff81005410, 0xffffffff81008010, 0xffffffff81008210, 0xffffffff81008410,
                          0xffffffff81008610, 0xffffffff81000010};
  t.stacks[kModuleKernel] = {0xffffffffc0000110, 0xffffffffc0000010, 0xffffffff82000010};
  return t;
}

Aggregate aggregate(uint32_t tgid, uint32_t tid, StackIds blocked, uint32_t waker_flags, uint32_t waker,
                         StackIds waker_stacks, uint64_t last_ns, uint64_t count) {
  Aggregate a;
  std::memset(&a, 0, sizeof a);
  a.key.tgid = tgid;
  a.key.tid = tid;
  a.key.kern_stack_id = blocked.kernel;
  a.key.user_stack_id = blocked.user;
  a.key.state = OFFWAKE_STATE_INTERRUPTIBLE;
  a.key.waker_flags = waker_flags;
  a.key.waker_tgid = a.key.waker_tid = waker;
  a.key.waker_kern_stack_id = waker_stacks.kernel;
  a.key.waker_user_stack_id = waker_stacks.user;
  a.value.total_ns = 2'000'000 * count;
  a.value.count = count;
  a.value.max_ns = 3'000'000;
  a.value.last_ns = last_ns;
  return a;
}

void add_hop(Aggregate& a, StackIds blocked, uint32_t state, uint32_t waker_flags, uint32_t waker,
             StackIds waker_stacks) {
  offwake_hop& h = a.key.chain.hop[a.key.chain.hops++];
  h.kern_stack_id = blocked.kernel;
  h.user_stack_id = blocked.user;
  h.state = state;
  h.waker_flags = waker_flags;
  h.waker_tgid = h.waker_tid = waker;
  h.waker_kern_stack_id = waker_stacks.kernel;
  h.waker_user_stack_id = waker_stacks.user;
}

// The relay of wl_relay: the first naps and wakes the second (a futex), which wakes the third
// (a pipe). With `chain`, each block carries its chain.
std::vector<Aggregate> aggregates(bool chain) {
  const StackIds none{kNoStack, kNoStack};
  std::vector<Aggregate> out;
  // The third, woken by the second, who waited for the first, who napped until a timer.
  Aggregate third = aggregate(kThird, kThird, {kReadKernel, kReadUser}, 0, kSecond, {kWriteKernel, kWriteUser},
                                   5'000'100'000, 3);
  if (chain) {
    add_hop(third, {kFutexKernel, kFutexUser}, OFFWAKE_STATE_INTERRUPTIBLE, 0, kFirst, {kWakeFutexKernel, kNoStack});
    add_hop(third, {kNapKernel, kNapUser}, OFFWAKE_STATE_INTERRUPTIBLE, OFFWAKE_WAKER_HARDIRQ, 0,
            {kIrqKernel, kNoStack});
    third.key.chain.end = OFFWAKE_CHAIN_END_DEPTH;
  }
  out.push_back(third);
  // The second, woken by the first, who was never seen blocking.
  Aggregate second = aggregate(kSecond, kSecond, {kFutexKernel, kFutexUser}, 0, kFirst,
                                    {kWakeFutexKernel, kNoStack}, 5'000'050'000, 2);
  if (chain) second.key.chain.end = OFFWAKE_CHAIN_END_UNSEEN;
  out.push_back(second);
  // The first's nap, ended by a timer interrupt.
  Aggregate first = aggregate(kFirst, kFirst, {kNapKernel, kNapUser}, OFFWAKE_WAKER_HARDIRQ, 0,
                                   {kIrqKernel, kNoStack}, 5'000'000'000, 4);
  if (chain) first.key.chain.end = OFFWAKE_CHAIN_END_IRQ;
  out.push_back(first);
  // The child, in a module's wait, still blocked at the stop; a failed user walk.
  Aggregate child = aggregate(kThird, kChild, {kModuleKernel, -EFAULT}, OFFWAKE_WAKER_STILL_BLOCKED, 0, none,
                                   5'000'200'000, 1);
  child.key.state = OFFWAKE_STATE_UNINTERRUPTIBLE | OFFWAKE_STATE_NOLOAD;
  if (chain) child.key.chain.end = OFFWAKE_CHAIN_END_NO_WAKER;
  out.push_back(child);
  // A kernel thread's wakeup of the second, after which the chain stops at a kernel thread.
  Aggregate kthread = aggregate(kSecond, kSecond, {kReadKernel, kReadUser}, OFFWAKE_WAKER_KTHREAD, 2,
                                     {kWakeFutexKernel, kNoStack}, 5'000'150'000, 1);
  if (chain) kthread.key.chain.end = OFFWAKE_CHAIN_END_KTHREAD;
  out.push_back(kthread);
  return out;
}

perfdata::CommRecord comm(uint32_t pid, uint32_t tid, const char* name, uint64_t time) {
  perfdata::CommRecord c;
  c.pid = pid;
  c.tid = tid;
  c.comm = name;
  c.sample_id = {pid, tid, time, 0, 0, 0};
  return c;
}

perfdata::Mmap2Record mapping(uint32_t pid, uint64_t start, uint64_t len, const char* file, uint64_t time) {
  perfdata::Mmap2Record m;
  m.pid = m.tid = pid;
  m.start = start;
  m.len = len;
  m.prot = 5;
  m.flags = 2;  // MAP_PRIVATE
  m.filename = file;
  m.sample_id = {pid, pid, time, 0, 0, 0};
  return m;
}

// What perf offwake record writes for the relay: the kernel's mapping, the threads and their
// mappings, the pseudo-wakers' names, then the samples, with a round after the first three.
std::vector<Record> relay_records(const OffwakeEventIds& ids, bool chain, bool cut_short) {
  std::vector<Record> out;
  perfdata::Mmap2Record kernel;
  kernel.cpumode = PERF_RECORD_MISC_KERNEL;
  kernel.pid = static_cast<uint32_t>(-1);
  kernel.start = kernel.pgoff = 0xffffffff81000000;
  kernel.len = ~uint64_t{0} - kernel.start;
  kernel.prot = 5;
  kernel.filename = "[kernel.kallsyms]_text";
  out.push_back(kernel);
  const std::pair<uint32_t, const char*> threads[] = {
      {kFirst, "relay-first"}, {kSecond, "relay-second"}, {kThird, "relay-third"}};
  for (const auto& [pid, name] : threads) {
    out.push_back(comm(pid, pid, name, 1'000'000'000));
    out.push_back(mapping(pid, kExe, 0x5000, "/usr/bin/true", 1'000'000'000));
    out.push_back(mapping(pid, kLibc, 0x1d5000, "/usr/lib/x86_64-linux-gnu/libc.so.6", 1'000'000'000));
  }
  perfdata::TaskRecord fork;
  fork.pid = kThird;
  fork.ppid = kThird;
  fork.tid = kChild;
  fork.ptid = kThird;
  fork.time = 2'000'000'000;
  fork.sample_id = {kThird, kChild, 2'000'000'000, 0, 0, 0};
  out.push_back(fork);
  for (const PseudoWaker& p : kPseudoWakers) out.push_back(comm(p.tid, p.tid, p.comm, 0));
  out.push_back(perfdata::FinishedInitRecord{});

  const test::StackTable table = stacks();
  AggregateSamples convert(table, ids);
  size_t n = 0;
  for (const Aggregate& a : aggregates(chain)) {
    std::vector<perfdata::SampleRecord> samples = convert.convert(a, 1);
    // A group whose last hop sample is missing, and that sample on its own after the round.
    if (cut_short && n == 0) {
      out.insert(out.end(), samples.begin(), samples.end() - 1);
      if (samples.size() > 2) out.push_back(samples[2]);
    } else {
      out.insert(out.end(), samples.begin(), samples.end());
    }
    if (++n == 3) out.push_back(perfdata::FinishedRoundRecord{});
  }
  return out;
}

void check_seed(const std::string& name, const Bytes& produced) {
  ASSERT_LT(produced.size(), 64u * 1024) << name << ": keep seeds small";
  test::check_golden(kCorpus + name, produced);
}

const OffwakeEventIds kChainIds{1000, 1001, 1002, 1003};
const OffwakeEventIds kDepthOneIds{1000, 1001};

TEST(ParamDictFuzzSeeds, AreTheWritersOutput) {
  check_seed("chain_pipe.data",
             perfdata::test::write_to_memory(Mode::kPipe, offwake_events(kChainIds), relay_records(kChainIds, true, false)));
  // A build id that libc on disk does not have: its frames are "[unknown]" by name.
  perfdata::BuildIdEntry wrong{static_cast<int32_t>(kFirst), PERF_RECORD_MISC_USER, {}, "/usr/lib/x86_64-linux-gnu/libc.so.6"};
  wrong.build_id.size = 20;
  wrong.build_id.bytes.fill(0xab);
  check_seed("chain_cut_short_file.data",
             perfdata::test::write_to_memory(Mode::kFile, offwake_events(kChainIds),
                                             relay_records(kChainIds, true, true), {wrong}));
  check_seed("depth1_file.data", perfdata::test::write_to_memory(Mode::kFile, offwake_events(kDepthOneIds),
                                                                 relay_records(kDepthOneIds, false, false)));
}

// The seeds hold what they are for: groups with every chain ending, one cut short, a stray
// hop sample.
TEST(ParamDictFuzzSeeds, HoldChainsOfEveryKind) {
  struct Counter : report::SampleVisitor {
    std::set<uint32_t> ends;
    uint64_t groups = 0, hops = 0, cut_short = 0;
    Status offwake(const perfdata::EventDesc&, const perfdata::SampleRecord&, const report::OffwakeGroup& g) override {
      ++groups;
      hops += g.hops.size();
      cut_short += g.cut_short();
      ends.insert(g.chain_end);
      return ok_status();
    }
    Status sample(const perfdata::EventDesc&, const perfdata::SampleRecord&) override { return ok_status(); }
  };
  auto read = [](const std::string& name, Counter& c) -> report::SampleStream::Stats {
    std::ifstream in(kCorpus + name, std::ios::binary);
    Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto reader = perfdata::PerfDataReader::from_memory(std::move(bytes));
    EXPECT_TRUE(reader) << name;
    if (!reader) return {};
    symbolize::Symbolizer symbolizer;
    report::SampleStream stream(*reader, symbolizer);
    Status s = stream.run(c);
    EXPECT_TRUE(s) << name << ": " << s.error().message();
    return stream.stats();
  };
  Counter pipe, cut, depth1;
  read("chain_pipe.data", pipe);
  EXPECT_EQ(pipe.groups, 5u);
  EXPECT_EQ(pipe.hops, 2u);
  EXPECT_EQ(pipe.cut_short, 0u);
  EXPECT_EQ(pipe.ends, (std::set<uint32_t>{OFFWAKE_CHAIN_END_DEPTH, OFFWAKE_CHAIN_END_IRQ, OFFWAKE_CHAIN_END_KTHREAD,
                                           OFFWAKE_CHAIN_END_UNSEEN, OFFWAKE_CHAIN_END_NO_WAKER}));
  auto stats = read("chain_cut_short_file.data", cut);
  EXPECT_EQ(cut.cut_short, 1u);
  EXPECT_EQ(stats.stray_hop_samples, 1u);
  read("depth1_file.data", depth1);
  EXPECT_EQ(depth1.groups, 5u);
  EXPECT_EQ(depth1.hops, 0u);
}

}  // namespace
}  // namespace offwake
