// bpf::StackTraceMap on real maps (root): a stack store made as the loader makes it, filled
// from here as the programs fill it. end_window() empties it of the stacks no lookup of the
// window asked for, once it is half full; keeps what it emptied for two such ends; and changes
// the programs' stack_store_epoch after each, which is what makes their memos check again.
#include "bpf/stack_trace_map.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstddef>
#include <initializer_list>
#include <vector>

#include "offwake.h"
#include "util/fd.h"

namespace offwake::bpf {
namespace {

constexpr uint32_t kDepth = 4;
constexpr uint32_t kStoreEntries = 8;

uint64_t store_id(uint64_t n) { return OFFWAKE_STORE_ID | n; }

// Stack n: frames n*0x1000 + 1.., n + 1 of them.
std::vector<uint64_t> frames_of(uint64_t n) {
  std::vector<uint64_t> f;
  for (uint64_t i = 0; i <= n % kDepth; ++i) f.push_back(n * 0x1000 + i + 1);
  return f;
}

class StackStore : public ::testing::Test {
 protected:
  void SetUp() override {
    traces_ = UniqueFd(bpf_map_create(BPF_MAP_TYPE_STACK_TRACE, "test_traces", sizeof(uint32_t),
                                      kDepth * sizeof(uint64_t), 16, nullptr));
    ASSERT_TRUE(traces_.valid()) << "stack_trace map: " << errno;
    LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
    store_ = UniqueFd(bpf_map_create(BPF_MAP_TYPE_HASH, "test_store", sizeof(uint64_t), kValueSize, kStoreEntries,
                                     &opts));
    ASSERT_TRUE(store_.valid()) << "stack store: " << errno;
  }

  // Stores stacks `ns` in the kernel's store, as store_stack() does.
  void store(std::initializer_list<uint64_t> ns) {
    for (uint64_t n : ns) {
      offwake_stored_stack st{};
      const auto f = frames_of(n);
      st.nr = static_cast<uint32_t>(f.size());
      for (size_t i = 0; i < f.size(); ++i) st.ips[i] = f[i];
      const uint64_t id = store_id(n);
      ASSERT_EQ(bpf_map_update_elem(store_.get(), &id, &st, BPF_NOEXIST), 0) << n;
    }
  }

  bool in_kernel(uint64_t n) {
    const uint64_t id = store_id(n);
    std::vector<uint8_t> value(kValueSize);
    return bpf_map_lookup_elem(store_.get(), &id, value.data()) == 0;
  }

  static void expect_found(const StackTraceMap& m, uint64_t n) {
    auto f = m.lookup(store_id(n));
    ASSERT_TRUE(f) << n << ": " << f.error().what();
    EXPECT_EQ(std::vector<uint64_t>(f->begin(), f->end()), frames_of(n)) << n;
  }

  static constexpr uint32_t kValueSize = offsetof(offwake_stored_stack, ips) + kDepth * sizeof(uint64_t);
  UniqueFd traces_, store_;
};

TEST_F(StackStore, EndWindowEmptiesTheStacksNoSampleUsedAndKeepsThemForTwo) {
  uint32_t epoch = 0;
  auto made = StackTraceMap::from_fds(traces_.get(), store_.get(), &epoch);
  ASSERT_TRUE(made) << made.error().what();
  StackTraceMap& m = *made;

  // Window 1: 5 of 8 stored, 1 and 2 used: 3, 4 and 5 go.
  store({1, 2, 3, 4, 5});
  expect_found(m, 1);
  expect_found(m, 2);
  ASSERT_TRUE(m.end_window());
  EXPECT_TRUE(in_kernel(1) && in_kernel(2));
  EXPECT_FALSE(in_kernel(3) || in_kernel(4) || in_kernel(5));
  EXPECT_EQ(epoch, 1u) << "the programs are told after the deletes";
  EXPECT_EQ(m.store_emptied(), 1u);
  EXPECT_EQ(m.stacks_emptied(), 3u);

  // Window 2: a block open across the switch still names 3; the store, 2 of 8, is not emptied.
  expect_found(m, 3);
  ASSERT_TRUE(m.end_window());
  EXPECT_EQ(epoch, 1u);
  EXPECT_TRUE(in_kernel(1) && in_kernel(2));

  // Window 3: 6 of 8; only 6 used: 1, 2, 7, 8 and 9 go. 3 is kept one more end.
  store({6, 7, 8, 9});
  expect_found(m, 6);
  expect_found(m, 3);
  ASSERT_TRUE(m.end_window());
  EXPECT_EQ(epoch, 2u);
  EXPECT_FALSE(in_kernel(1) || in_kernel(7));
  EXPECT_EQ(m.stacks_emptied(), 8u);

  // Window 4: 5 of 8; 6 used, 10 to 13 go, and with them the stacks the first end emptied.
  store({10, 11, 12, 13});
  expect_found(m, 6);
  expect_found(m, 1);  // emptied by the last end
  ASSERT_TRUE(m.end_window());
  EXPECT_EQ(epoch, 3u);

  // Window 5: 3 is gone for good, and says so; 1 and 10 are kept still; a stack stored again
  // after it was emptied has its id again.
  auto gone = m.lookup(store_id(3));
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().errnum(), kStackEmptied) << gone.error().what();
  expect_found(m, 1);
  expect_found(m, 10);
  store({4});
  expect_found(m, 4);
}

// Without the programs' epoch (a map only read), nothing is ever deleted.
TEST_F(StackStore, WithoutTheEpochNothingIsEmptied) {
  auto made = StackTraceMap::from_fds(traces_.get(), store_.get());
  ASSERT_TRUE(made) << made.error().what();
  store({1, 2, 3, 4, 5, 6});
  expect_found(made.value(), 1);
  ASSERT_TRUE(made->end_window());
  for (uint64_t n = 1; n <= 6; ++n) EXPECT_TRUE(in_kernel(n)) << n;
  EXPECT_EQ(made->stacks_emptied(), 0u);
}

}  // namespace
}  // namespace offwake::bpf
