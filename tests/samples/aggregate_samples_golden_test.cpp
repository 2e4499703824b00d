// Without a wakeup chain (--chain-depth 1, the default), the samples of aggregates are exactly
// what they were before chains existed: the golden file was written by the code of commit
// 87878db, the last one without chains, from the same aggregates (this test, with
// convert() returning the pair it returned then). One change since, regenerated: an
// OFFWAKE_WAKER_EARLY aggregate names its waker thread (without stacks), where its waker was
// the "[woken early]" pseudo thread. Regenerate only with a reason (golden/README.md says how).
#include <linux/perf_event.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>

#include "support/stack_table.h"
#include "../perfdata/fixtures.h"
#include "samples/aggregate_samples.h"
#include "support/golden_file.h"
#include "support/perf_decoded.h"
#include "support/perf_script.h"
#include "support/run.h"

namespace offwake {
namespace {

using test::StackTable;

// Every kind of waker, a stack from the store, and missing stacks.
std::vector<Aggregate> aggregates() {
  const uint32_t kinds[] = {0,
                            OFFWAKE_WAKER_HARDIRQ,
                            OFFWAKE_WAKER_SOFTIRQ,
                            OFFWAKE_WAKER_NMI,
                            OFFWAKE_WAKER_NONE,
                            OFFWAKE_WAKER_KTHREAD,
                            OFFWAKE_WAKER_STILL_BLOCKED,
                            OFFWAKE_WAKER_EARLY};
  std::vector<Aggregate> out;
  uint32_t n = 0;
  for (uint32_t flags : kinds) {
    Aggregate a;
    std::memset(&a, 0, sizeof a);
    a.key.tgid = 100 + n;
    a.key.tid = 1000 + n;
    a.key.kern_stack_id = 1;
    a.key.user_stack_id = n % 2 ? 2 : OFFWAKE_STORE_ID | 7;
    a.key.state = n % 3 == 0 ? OFFWAKE_STATE_UNINTERRUPTIBLE : OFFWAKE_STATE_INTERRUPTIBLE;
    a.key.waker_flags = flags;
    // An early waker is a thread named without its stacks.
    const bool thread = flags == 0 || flags == OFFWAKE_WAKER_KTHREAD || flags == OFFWAKE_WAKER_EARLY;
    a.key.waker_tgid = thread ? 200 + n : 0;
    a.key.waker_tid = thread ? 2000 + n : 0;
    a.key.waker_kern_stack_id = flags & (OFFWAKE_WAKER_NONE | OFFWAKE_WAKER_STILL_BLOCKED | OFFWAKE_WAKER_EARLY)
                                    ? OFFWAKE_NO_STACK
                                    : 3;
    a.key.waker_user_stack_id = flags == 0 ? 4 : OFFWAKE_NO_STACK;
    a.key.cgroup_id = 0x100 + n;
    a.key.waker_cgroup_id = thread ? 0x200 + n : 0;
    std::strcpy(a.key.comm, "blocked");
    std::strcpy(a.key.waker_comm, thread ? "waker" : "");
    a.value.total_ns = 1'000'000ull * (n + 1);
    a.value.count = n + 1;
    a.value.max_ns = 1'000'000ull;
    a.value.last_ns = 5'000'000'000ull + n;
    out.push_back(a);
    ++n;
  }
  out[3].key.user_stack_id = -EFAULT;         // a failed walk
  out[5].key.kern_stack_id = 99;              // gone from the map
  out[6].key.user_stack_id = -OFFWAKE_ERR_EXEC;
  return out;
}

// The stacks the aggregates name (99 is not among them: gone from the map).
StackTable stacks() {
  StackTable table;
  table.stacks[1] = {0xffffffff81000200, 0xffffffff81000280};
  table.stacks[2] = {0x401000, 0x402000};
  table.stacks[OFFWAKE_STORE_ID | 7] = {0x401100, 0x402000, 0x403000};
  table.stacks[3] = {0xffffffff81000300, 0xffffffff81000380};
  table.stacks[4] = {0x404000, 0x402000};
  return table;
}

TEST(AggregateSamplesGolden, DepthOneSamplesAreThoseOfBeforeChains) {
  StackTable table = stacks();
  OffwakeEventIds ids{1000, 1001};
  AggregateSamples convert(table, ids);
  std::vector<perfdata::Record> records;
  for (const Aggregate& a : aggregates())
    for (auto& s : convert.convert(a, 1)) records.push_back(s);
  const perfdata::Bytes produced =
      perfdata::test::write_to_memory(perfdata::Mode::kPipe, offwake_events(ids), records);
  // A difference means depth-1 samples are no longer those of before chains.
  test::check_golden(OFFWAKE_SOURCE_DIR "/tests/samples/golden/depth1_samples.data", produced);
}

// The golden is what perf reads: Debian's perf script shows every sample of it, in pairs,
// with the periods the aggregates had.
TEST(AggregateSamplesGolden, PerfReadsTheGolden) {
  auto r = test::run("perf script -F comm,tid,period,event -i " OFFWAKE_SOURCE_DIR
                     "/tests/samples/golden/depth1_samples.data");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<std::pair<uint64_t, std::string>> got;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string comm, event;
    uint64_t tid = 0, period = 0;
    if (words >> comm >> tid >> period >> event) got.push_back({period, event});
  }
  const auto want = aggregates();
  ASSERT_EQ(got.size(), 2 * want.size()) << r.out;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[2 * i].second, "offwake-time:");
    EXPECT_EQ(got[2 * i + 1].second, "offwake-waker:");
    EXPECT_EQ(got[2 * i].first, got[2 * i + 1].first);
  }
  uint64_t total = 0, want_total = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    total += got[2 * i].first;
    want_total += want[i].value.total_ns;
  }
  EXPECT_EQ(total, want_total);
}

// The pseudo-threads of wakers that are not threads, as perf-offwake-record(1) lists them
// ("SAMPLES IN PERF.DATA": tids from 2147483632 up, in this order). A block woken before
// --min-block (OFFWAKE_WAKER_EARLY) names its waker thread.
uint32_t pseudo_waker_tid(uint32_t flags) {
  switch (flags) {
    case OFFWAKE_WAKER_HARDIRQ: return 2147483632u;
    case OFFWAKE_WAKER_SOFTIRQ: return 2147483633u;
    case OFFWAKE_WAKER_NMI: return 2147483634u;
    case OFFWAKE_WAKER_NONE: return 2147483635u;
    case OFFWAKE_WAKER_STILL_BLOCKED: return 2147483636u;
    default: return 0;  // a thread
  }
}

// A kernel and a user stack, as a callchain in the perf.data layout (a PERF_CONTEXT_* marker
// before each part that has frames) and as perf's resolved frames; a stack id that is not in
// the table (an error, gone from the map, none) has no frames.
struct WantChain {
  std::vector<uint64_t> chain, frames;
};
WantChain want_chain(const StackTable& table, int64_t kern, int64_t user) {
  WantChain w;
  for (auto [id, marker] : {std::pair{kern, uint64_t(PERF_CONTEXT_KERNEL)}, std::pair{user, uint64_t(PERF_CONTEXT_USER)}}) {
    auto it = table.stacks.find(static_cast<uint64_t>(id));
    if (it == table.stacks.end() || it->second.empty()) continue;
    w.chain.push_back(marker);
    for (uint64_t ip : it->second) {
      w.chain.push_back(ip);
      w.frames.push_back(ip);
    }
  }
  return w;
}

template <typename T>
T le(const std::vector<uint8_t>& b, size_t at) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T) && at + i < b.size(); ++i) v |= T(b[at + i]) << (8 * i);
  return v;
}

// An independent reading of the golden, field by field: Debian's perf decodes the two samples
// of each aggregate to what perf-offwake-record(1) says they are. offwake-time: the blocked
// thread's pid and tid, its kernel then user stack, period = total_ns, time = last_ns, and a raw
// payload of u32 version 3, u32 state, u64 count, u64 max_ns, u32 waker flags, u32 chain (0 at
// depth 1), three u64 of sampling (0 without --sample-period) and the u64 waker cgroup, padded
// with zeros to a u64 boundary. offwake-waker: the waker's pid and tid (a
// pseudo-thread's for interrupts and missing wakers), its stacks, the same period and time.
TEST(AggregateSamplesGolden, PerfDecodesEveryFieldOfTheGolden) {
  std::string error;
  const auto got = test::perf_decoded_samples(
      test::kDebianPerf, OFFWAKE_SOURCE_DIR "/tests/samples/golden/depth1_samples.data", &error);
  ASSERT_TRUE(error.empty()) << error;
  const auto want = aggregates();
  const StackTable table = stacks();
  ASSERT_EQ(got.size(), 2 * want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const Aggregate& a = want[i];
    SCOPED_TRACE("aggregate " + std::to_string(i));
    const auto& blocked = got[2 * i];
    const auto& waker = got[2 * i + 1];
    // What both samples of an aggregate say the same way: the thread, the aggregate's time and
    // period, and the stacks of its key.
    auto expect_sample = [&](const auto& got, const char* event, uint32_t pid, uint32_t tid, int64_t kern,
                             int64_t user) {
      EXPECT_EQ(got.event, event);
      EXPECT_EQ(got.pid, pid);
      EXPECT_EQ(got.tid, tid);
      EXPECT_EQ(got.period, a.value.total_ns);
      EXPECT_EQ(got.time, a.value.last_ns);
      WantChain want = want_chain(table, kern, user);
      EXPECT_EQ(got.chain, want.chain);
      EXPECT_EQ(got.frames, want.frames);
      return want;
    };
    const WantChain bc = expect_sample(blocked, "offwake-time", a.key.tgid, a.key.tid, a.key.kern_stack_id,
                                       a.key.user_stack_id);
    ASSERT_FALSE(bc.frames.empty());
    EXPECT_EQ(blocked.ip, bc.frames[0]);
    EXPECT_EQ(blocked.cpumode, bc.frames[0] >= 0xffff800000000000ull ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER);
    ASSERT_EQ(blocked.raw.size(), 68u);  // 64 bytes of payload; with its u32 size, 72
    EXPECT_EQ(le<uint32_t>(blocked.raw, 0), 3u);
    EXPECT_EQ(le<uint32_t>(blocked.raw, 4), a.key.state);
    EXPECT_EQ(le<uint64_t>(blocked.raw, 8), a.value.count);
    EXPECT_EQ(le<uint64_t>(blocked.raw, 16), a.value.max_ns);
    EXPECT_EQ(le<uint32_t>(blocked.raw, 24), a.key.waker_flags);
    EXPECT_EQ(le<uint32_t>(blocked.raw, 28), 0u);
    for (size_t at = 32; at < 56; at += 8) EXPECT_EQ(le<uint64_t>(blocked.raw, at), 0u) << at;
    EXPECT_EQ(le<uint64_t>(blocked.raw, 56), a.key.waker_cgroup_id);
    EXPECT_EQ(le<uint32_t>(blocked.raw, 64), 0u);

    const uint32_t pseudo = pseudo_waker_tid(a.key.waker_flags);
    expect_sample(waker, "offwake-waker", pseudo ? pseudo : a.key.waker_tgid, pseudo ? pseudo : a.key.waker_tid,
                  a.key.waker_kern_stack_id, a.key.waker_user_stack_id);
    EXPECT_TRUE(waker.raw.empty());
  }
}

}  // namespace
}  // namespace offwake
