// Without a wakeup chain (--chain-depth 1, the default), the samples of aggregates are exactly
// what they were before chains existed: the golden file was written by the code of commit
// 87878db, the last one without chains, from the same aggregates (this test, with
// convert() returning the pair it returned then). One change since, regenerated: an
// OFFWAKE_WAKER_EARLY aggregate names its waker thread (without stacks), where its waker was
// the "[woken early]" pseudo thread. Regenerate only with a reason: OFFWAKE_REGENERATE_GOLDEN=1.
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
#include "record/aggregate_samples.h"
#include "support/golden_file.h"
#include "support/run.h"

namespace offwake {
namespace {

using test::StackTable;

// Every kind of waker, a stack from the store, and missing stacks.
std::vector<bpf::Aggregate> aggregates() {
  const uint32_t kinds[] = {0,
                            OFFWAKE_WAKER_HARDIRQ,
                            OFFWAKE_WAKER_SOFTIRQ,
                            OFFWAKE_WAKER_NMI,
                            OFFWAKE_WAKER_NONE,
                            OFFWAKE_WAKER_KTHREAD,
                            OFFWAKE_WAKER_STILL_BLOCKED,
                            OFFWAKE_WAKER_EARLY};
  std::vector<bpf::Aggregate> out;
  uint32_t n = 0;
  for (uint32_t flags : kinds) {
    bpf::Aggregate a;
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

TEST(AggregateSamplesGolden, DepthOneSamplesAreThoseOfBeforeChains) {
  StackTable table;
  table.stacks[1] = {0xffffffff81000200, 0xffffffff81000280};
  table.stacks[2] = {0x401000, 0x402000};
  table.stacks[OFFWAKE_STORE_ID | 7] = {0x401100, 0x402000, 0x403000};
  table.stacks[3] = {0xffffffff81000300, 0xffffffff81000380};
  table.stacks[4] = {0x404000, 0x402000};
  OffwakeEventIds ids{1000, 1001};
  AggregateSamples convert(table, ids);
  std::vector<perfdata::Record> records;
  for (const bpf::Aggregate& a : aggregates())
    for (auto& s : convert.convert(a, 1)) records.push_back(s);
  const perfdata::Bytes produced =
      perfdata::test::write_to_memory(perfdata::Mode::kPipe, offwake_events(ids), records);
  // A difference means depth-1 samples are no longer those of before chains.
  test::check_golden(OFFWAKE_SOURCE_DIR "/tests/record/golden/depth1_samples.data", produced);
}

// The golden is what perf reads: Debian's perf script shows every sample of it, in pairs,
// with the periods the aggregates had.
TEST(AggregateSamplesGolden, PerfReadsTheGolden) {
  auto r = test::run("perf script -F comm,tid,period,event -i " OFFWAKE_SOURCE_DIR
                     "/tests/record/golden/depth1_samples.data");
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

}  // namespace
}  // namespace offwake
