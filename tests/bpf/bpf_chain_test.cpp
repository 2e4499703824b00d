// Wakeup chains (--chain-depth), as the BPF programs record them: wl_relay's three processes
// relay through two pipes, so relay-third's every block has a known chain: relay-second's
// write woke it, after relay-second's read was woken by relay-first's write, after
// relay-first's nap was ended by the timer interrupt.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "capture.h"
#include "support/paths.h"
#include "support/tolerances.h"
#include "support/truth.h"

namespace offwake::bpf {
namespace {

using test::kBlockedTimeTolerance;
using test::kWholeChainShare;
using test::parse_relay;
using test::Relay;

const std::string kRelay = "wl_relay";

struct Functions {
  Range nap, kick, wait_kick, pass, wait_pass;
};

Functions relay_functions() {
  auto f = [](const char* name) {
    auto r = function_range(kWorkloads + kRelay, name);
    EXPECT_TRUE(r) << name;
    return r.value_or(Range{});
  };
  return {f("wl_relay_nap"), f("wl_relay_kick"), f("wl_relay_wait_kick"), f("wl_relay_pass"), f("wl_relay_wait_pass")};
}

using Frames = std::vector<uint64_t>;

bool user_in(const Capture& c, int64_t id, const Range& r) { return stack_hits(frames_of(*c.stacks, id), r); }

// relay-third's blocked time in wl_relay_wait_pass: all of it, and the part whose chain is the
// whole relay, up to `depth` hops.
struct ThirdTime {
  uint64_t ns = 0, with_chain = 0, count = 0;
};

ThirdTime third_time(const Capture& c, const Relay& r, const Functions& f, uint32_t depth) {
  ThirdTime t;
  for (const Aggregate& a : c.aggregates) {
    const offwake_key& k = a.key;
    if (k.tid != r.third || !user_in(c, k.user_stack_id, f.wait_pass)) continue;
    t.ns += a.value.total_ns;
    t.count += a.value.count;
    // Hop 1: relay-second's write.
    bool whole = k.waker_tid == r.second && user_in(c, k.waker_user_stack_id, f.pass);
    if (depth == 1) {
      whole = whole && k.chain.hops == 0 && k.chain.end == OFFWAKE_CHAIN_END_NONE;
    } else {
      // Hop 2: relay-second's read, woken by relay-first's write.
      const offwake_hop& h2 = k.chain.hop[0];
      whole = whole && k.chain.hops >= 1 && user_in(c, h2.user_stack_id, f.wait_kick) &&
              h2.waker_tid == r.first && user_in(c, h2.waker_user_stack_id, f.kick) &&
              (h2.state & OFFWAKE_STATE_INTERRUPTIBLE);
      if (depth == 2) {
        whole = whole && k.chain.hops == 1 && k.chain.end == OFFWAKE_CHAIN_END_DEPTH;
      } else {
        // Hop 3: relay-first's nap, ended by an interrupt: the chain ends there.
        const offwake_hop& h3 = k.chain.hop[1];
        whole = whole && k.chain.hops == 2 && user_in(c, h3.user_stack_id, f.nap) &&
                (h3.waker_flags & OFFWAKE_WAKER_IRQ_MASK) && h3.waker_tid == 0 &&
                h3.waker_user_stack_id == OFFWAKE_NO_STACK && h3.waker_kern_stack_id >= 0 &&
                k.chain.end == OFFWAKE_CHAIN_END_IRQ;
      }
      // Nothing beyond the hops filled in.
      for (uint32_t i = k.chain.hops; i < OFFWAKE_MAX_CHAIN_DEPTH - 1; ++i) {
        static const offwake_hop zero{};
        whole = whole && std::memcmp(&k.chain.hop[i], &zero, sizeof zero) == 0;
      }
    }
    if (whole) t.with_chain += a.value.total_ns;
  }
  return t;
}

void expect_relay_chain(const Capture& c, const Relay& r, const Functions& f, uint32_t depth) {
  SCOPED_TRACE("depth " + std::to_string(depth));
  ASSERT_TRUE(r.third && r.third_truth.tid == r.third) << "relay-third printed no truth line";
  const Truth& truth = r.third_truth;
  ThirdTime t = third_time(c, r, f, depth);
  EXPECT_EQ(t.count, truth.count);
  // The workload times its read() from user space, a few microseconds more than the block
  // (kBlockedTimeTolerance). Most of it with the whole chain (kWholeChainShare).
  EXPECT_NEAR(static_cast<double>(t.ns), static_cast<double>(truth.blocked_ns),
              kBlockedTimeTolerance * truth.blocked_ns);
  EXPECT_GE(t.with_chain, kWholeChainShare * truth.blocked_ns) << "of " << t.ns << " ns";
}

class Chain : public ::testing::Test {
 protected:
  void SetUp() override { f = relay_functions(); }
  Functions f;
};

// Depth 1, 2 and 3 on the same run; and depth 3 lazily (--min-block: stacks only for kept
// blocks, user stacks by task work or rseq_update) and eagerly.
TEST_F(Chain, RelayChainHasEveryHopWithItsStacks) {
  LoaderOptions d1, d2, d3, lazy3, eager3;
  d2.chain_depth = 2;
  d3.chain_depth = lazy3.chain_depth = eager3.chain_depth = 3;
  lazy3.min_block_ns = eager3.min_block_ns = 1'000'000;  // every block of the relay is >= 20 ms
  eager3.eager = true;
  std::vector<Capture> caps;
  std::string text;
  ASSERT_NO_FATAL_FAILURE(run_captures(kRelay, {"-n", "10", "-m", "20"}, {d1, d2, d3, lazy3, eager3}, &caps, &text));
  Relay r = parse_relay(text);
  ASSERT_TRUE(r.first && r.second && r.third) << text;
  expect_relay_chain(caps[0], r, f, 1);
  expect_relay_chain(caps[1], r, f, 2);
  expect_relay_chain(caps[2], r, f, 3);
  expect_relay_chain(caps[3], r, f, 3);
  expect_relay_chain(caps[4], r, f, 3);
  EXPECT_NE(caps[3].task_work, caps[3].task_work_refused);  // refused: the sys_exit way
}

// A chain adds hops to a key, nothing else: without them, the keys of depth 4 are the keys of
// depth 1, with the same counts and times.
TEST_F(Chain, DepthOneKeysAreDeeperKeysWithoutTheirChains) {
  LoaderOptions d1, d4;
  d4.chain_depth = 4;
  std::vector<Capture> caps;
  std::string text;
  ASSERT_NO_FATAL_FAILURE(run_captures(kRelay, {"-n", "10", "-m", "20"}, {d1, d4}, &caps, &text));
  for (const Aggregate& a : caps[0].aggregates) {
    offwake_chain zero{};
    EXPECT_EQ(std::memcmp(&a.key.chain, &zero, sizeof zero), 0) << "a depth-1 key with a chain";
  }
  // Stack ids differ between the two loads: keys are compared by the frames they name, and
  // the depth-4 keys that differ only in their chains are summed.
  using Named = std::tuple<uint32_t, Frames, Frames, uint32_t, Frames, Frames, uint32_t, uint32_t>;
  auto named = [](const Capture& c, uint64_t* ns) {
    std::map<Named, uint64_t> out;
    for (const Aggregate& a : c.aggregates) {
      const offwake_key& k = a.key;
      out[{k.tid, frames_of(*c.stacks, k.kern_stack_id), frames_of(*c.stacks, k.user_stack_id), k.waker_tid,
           frames_of(*c.stacks, k.waker_kern_stack_id), frames_of(*c.stacks, k.waker_user_stack_id), k.state,
           k.waker_flags}] += a.value.count;
      *ns += a.value.total_ns;
    }
    return out;
  };
  uint64_t ns1 = 0, ns4 = 0;
  auto one = named(caps[0], &ns1), four = named(caps[1], &ns4);
  EXPECT_FALSE(one.empty());
  EXPECT_EQ(one, four);
  // The two programs read the clock microseconds apart: 1% (test::kSameRunTimeTolerance) of
  // the whole recording (three processes blocked ~0.2 s each) covers that skew; the equal keys
  // and counts above already rule out a lost or doubled block.
  EXPECT_NEAR(static_cast<double>(ns1), static_cast<double>(ns4), test::kSameRunTimeTolerance * ns1);
  EXPECT_EQ(caps[0].counters.blocks, caps[1].counters.blocks);
}

}  // namespace
}  // namespace offwake::bpf
