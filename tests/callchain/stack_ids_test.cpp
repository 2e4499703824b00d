// CallchainBuilder: stack ids from bpf_get_stackid() become a Callchain, and every missing
// half is counted under the reason the kernel (or the lookup) gave.
#include "callchain/stack_ids.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <set>

namespace offwake {
namespace {

// A stack map in memory: id -> frames. Ids in `broken` exist but cannot be read back.
class FakeStackTraces : public StackTraceSource {
 public:
  std::map<uint64_t, std::vector<uint64_t>> stacks;
  std::set<uint64_t> broken;
  mutable std::vector<uint64_t> looked_up;

  Result<std::span<const uint64_t>> lookup(uint64_t id) const override {
    looked_up.push_back(id);
    if (broken.count(id)) return Error("looking up stack " + std::to_string(id), EIO);
    auto it = stacks.find(id);
    if (it == stacks.end()) return Error("looking up stack " + std::to_string(id), ENOENT);
    return std::span<const uint64_t>(it->second);
  }
};

void expect_losses(const StackLosses& l, uint64_t walk, uint64_t coll, uint64_t full,
                   uint64_t other, uint64_t lookup) {
  EXPECT_EQ(l.walk_failed, walk);
  EXPECT_EQ(l.collisions, coll);
  EXPECT_EQ(l.map_full, full);
  EXPECT_EQ(l.other_errors, other);
  EXPECT_EQ(l.lookup_failed, lookup);
  EXPECT_EQ(l.total(), walk + coll + full + other + lookup);
}

class CallchainBuilderTest : public ::testing::Test {
 protected:
  CallchainBuilderTest() {
    // Stack map values are fixed-size arrays: zero-terminated unless full.
    source_.stacks[7] = {0xffffffff81000100, 0xffffffff81000200, 0, 0};
    source_.stacks[9] = {0x401000, 0x402000, 0x403000, 0};
    source_.stacks[11] = {0x501000, 0x502000};  // full length, no terminator
  }
  FakeStackTraces source_;
};

TEST_F(CallchainBuilderTest, KernelFramesThenUserFrames) {
  CallchainBuilder b(source_);
  Callchain c = b.build({7, 9});
  Callchain expected;
  expected.push(0xffffffff81000100, FrameContext::kKernel);
  expected.push(0xffffffff81000200, FrameContext::kKernel);
  expected.push(0x401000, FrameContext::kUser);
  expected.push(0x402000, FrameContext::kUser);
  expected.push(0x403000, FrameContext::kUser);
  EXPECT_EQ(c, expected);
  EXPECT_EQ(b.build({7, 11}).count(FrameContext::kUser), 2u);
  expect_losses(b.kernel_losses(), 0, 0, 0, 0, 0);
  expect_losses(b.user_losses(), 0, 0, 0, 0, 0);
}

TEST_F(CallchainBuilderTest, IdZeroIsAValidId) {
  source_.stacks[0] = {0x600000};
  CallchainBuilder b(source_);
  Callchain c = b.build({kNoStack, 0});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c.frames()[0], (Frame{0x600000, FrameContext::kUser}));
}

TEST_F(CallchainBuilderTest, NoStackHalvesAreSkippedWithoutLoss) {
  CallchainBuilder b(source_);
  Callchain kernel_only = b.build({7, kNoStack});  // a kernel thread has no user stack
  EXPECT_EQ(kernel_only.size(), 2u);
  EXPECT_EQ(kernel_only.count(FrameContext::kKernel), 2u);
  Callchain user_only = b.build({kNoStack, 9});
  EXPECT_EQ(user_only.size(), 3u);
  EXPECT_EQ(user_only.count(FrameContext::kUser), 3u);
  EXPECT_TRUE(b.build({}).empty());  // both default to kNoStack
  expect_losses(b.kernel_losses(), 0, 0, 0, 0, 0);
  expect_losses(b.user_losses(), 0, 0, 0, 0, 0);
  EXPECT_EQ(source_.looked_up, (std::vector<uint64_t>{7, 9}));
}

TEST_F(CallchainBuilderTest, NegativeIdsLandInTheirCounterPerHalf) {
  CallchainBuilder b(source_);
  // Kernel half: one of each reason. The user half stays good, so only kernel losses move.
  for (int64_t err : std::vector<int64_t>{-EFAULT, -EEXIST, -ENOMEM, -E2BIG, -EINVAL, -1}) {
    Callchain c = b.build({err, 9});
    EXPECT_EQ(c.count(FrameContext::kKernel), 0u) << err;
    EXPECT_EQ(c.count(FrameContext::kUser), 3u) << err;
  }
  expect_losses(b.kernel_losses(), 1, 1, 2, 2, 0);
  expect_losses(b.user_losses(), 0, 0, 0, 0, 0);

  // User half: EFAULT twice (the common "no frame pointers" case), EEXIST once.
  for (int64_t err : std::vector<int64_t>{-EFAULT, -EFAULT, -EEXIST}) {
    Callchain c = b.build({7, err});
    EXPECT_EQ(c.size(), 2u);
  }
  expect_losses(b.kernel_losses(), 1, 1, 2, 2, 0);
  expect_losses(b.user_losses(), 2, 1, 0, 0, 0);
  EXPECT_EQ(source_.looked_up, (std::vector<uint64_t>{9, 9, 9, 9, 9, 9, 7, 7, 7}));
}

TEST_F(CallchainBuilderTest, FailedLookupCountsLookupFailed) {
  source_.broken.insert(9);
  CallchainBuilder b(source_);
  Callchain c = b.build({7, 9});
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.count(FrameContext::kUser), 0u);
  c = b.build({42, 7});  // 42 is not in the map at all
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.count(FrameContext::kKernel), 0u);
  expect_losses(b.kernel_losses(), 0, 0, 0, 0, 1);
  expect_losses(b.user_losses(), 0, 0, 0, 0, 1);
}

TEST_F(CallchainBuilderTest, StoreIdIsLookedUpWholeNotTruncatedToAnotherStack) {
  // A stack store id (bit 62 set) is looked up as it is: never as stack 7.
  const int64_t store_id = (int64_t{1} << 62) | 7;
  CallchainBuilder b(source_);
  Callchain c = b.build({store_id, 9});
  EXPECT_EQ(c.count(FrameContext::kKernel), 0u);  // not in this source
  EXPECT_EQ(c.count(FrameContext::kUser), 3u);
  EXPECT_EQ(b.kernel_losses().lookup_failed, 1u);
  EXPECT_EQ(source_.looked_up, (std::vector<uint64_t>{static_cast<uint64_t>(store_id), 9}));
}

TEST_F(CallchainBuilderTest, StacksNotTakenAreCountedByReason) {
  CallchainBuilder b(source_);
  b.build({-ESRCH, -ENODATA});
  b.build({-ENOLCK, -ENOLCK});
  b.build({7, -ESTALE});
  const StackLosses& k = b.kernel_losses();
  const StackLosses& u = b.user_losses();
  EXPECT_EQ(k.not_traced, 1u);
  EXPECT_EQ(k.no_task_work, 1u);
  EXPECT_EQ(k.total(), 2u);
  EXPECT_EQ(u.no_user_context, 1u);
  EXPECT_EQ(u.no_task_work, 1u);
  EXPECT_EQ(u.exec, 1u);
  EXPECT_EQ(u.total(), 3u);  // every cause is in the total, none twice
}

TEST(StackLosses, AddAccumulatesEveryCounter) {
  StackLosses a{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  StackLosses b{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110};
  a += b;
  EXPECT_EQ(a.walk_failed, 11u);
  EXPECT_EQ(a.collisions, 22u);
  EXPECT_EQ(a.map_full, 33u);
  EXPECT_EQ(a.other_errors, 44u);
  EXPECT_EQ(a.lookup_failed, 55u);
  EXPECT_EQ(a.emptied, 66u);
  EXPECT_EQ(a.no_user_context, 77u);
  EXPECT_EQ(a.not_traced, 88u);
  EXPECT_EQ(a.no_task_work, 99u);
  EXPECT_EQ(a.exec, 110u);
  EXPECT_EQ(a.in_progress, 121u);
  EXPECT_EQ(a.total(), 726u);
}

// A stack its store emptied before it was asked for (bpf::StackTraceMap::end_window()) is
// counted as emptied, not as unreadable.
TEST(StackLosses, EmptiedStackIsCountedApart) {
  class Emptied : public StackTraceSource {
   public:
    Result<std::span<const uint64_t>> lookup(uint64_t id) const override {
      return Error("stored stack " + std::to_string(id) + " was emptied from the store", kStackEmptied);
    }
  } source;
  CallchainBuilder b(source);
  EXPECT_TRUE(b.build({5, 6}).empty());
  EXPECT_EQ(b.kernel_losses().emptied, 1u);
  EXPECT_EQ(b.user_losses().emptied, 1u);
  EXPECT_EQ(b.kernel_losses().lookup_failed, 0u);
  EXPECT_EQ(b.user_losses().total(), 1u);
}

}  // namespace
}  // namespace offwake
