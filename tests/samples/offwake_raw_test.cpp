// The offwake-time sample's raw payload: what the recorder encodes, every reader decodes, and
// a payload that is short, cut or not ours decodes to what it holds and no more.
#include "samples/offwake_raw.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "offwake.h"

namespace offwake {
namespace {

OffwakeRaw head(uint32_t hops) {
  OffwakeRaw h;
  h.state = 0x2;
  h.count = 7;
  h.max_ns = 123'456'789;
  h.waker_flags = OFFWAKE_WAKER_HARDIRQ;
  h.chain = hops ? make_chain(hops, OFFWAKE_CHAIN_END_IRQ) : 0;
  return h;
}

bool same(const OffwakeRaw& a, const OffwakeRaw& b) {
  return a.version == b.version && a.state == b.state && a.count == b.count && a.max_ns == b.max_ns &&
         a.waker_flags == b.waker_flags && a.chain == b.chain && a.sample_period_ns == b.sample_period_ns &&
         a.sampled == b.sampled && a.sampled_ns == b.sampled_ns && a.waker_cgroup == b.waker_cgroup;
}

TEST(OffwakeRaw, RoundTripsWithoutAChain) {
  OffwakeRaw h = head(0);
  h.waker_cgroup = 0x1234'5678'9abc;
  const std::vector<uint8_t> bytes = encode_offwake_raw(h);
  ASSERT_EQ(bytes.size(), sizeof(OffwakeRaw));
  auto d = decode_offwake_raw(bytes);
  ASSERT_TRUE(d);
  EXPECT_TRUE(same(d->head, h));
  EXPECT_EQ(d->head.version, 3u);
  EXPECT_EQ(d->head.waker_cgroup, 0x1234'5678'9abcu);
  EXPECT_TRUE(d->hops.empty());
}

// Files written before version 3 still read: version 1 (32 bytes, exact recordings) and 2
// (56 bytes, --sample-period), their hops right after their shorter heads, the fields they
// lack zero. The bytes are made by hand, as those recorders wrote them.
std::vector<uint8_t> old_payload(uint32_t version, std::initializer_list<uint64_t> tail, uint32_t hops) {
  std::vector<uint8_t> b;
  auto put = [&](uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  put(version, 4);
  put(0x2, 4);                          // state D
  put(7, 8);                            // count
  put(123'456'789, 8);                  // max_ns
  put(OFFWAKE_WAKER_SOFTIRQ, 4);        // waker_flags
  put(make_chain(hops, OFFWAKE_CHAIN_END_DEPTH), 4);
  for (uint64_t v : tail) put(v, 8);    // version 2: period, sampled, sampled_ns
  for (uint32_t i = 0; i < hops; ++i) {
    put(0x1, 4);
    put(OFFWAKE_WAKER_KTHREAD, 4);
  }
  return b;
}

TEST(OffwakeRaw, VersionOneOfEarlierRecordingsStillReads) {
  const std::vector<uint8_t> bytes = old_payload(1, {}, 2);
  ASSERT_EQ(bytes.size(), 32u + 16u);
  auto d = decode_offwake_raw(bytes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->head.version, 1u);
  EXPECT_EQ(d->head.state, 0x2u);
  EXPECT_EQ(d->head.count, 7u);
  EXPECT_EQ(d->head.max_ns, 123'456'789u);
  EXPECT_EQ(d->head.waker_flags, uint32_t{OFFWAKE_WAKER_SOFTIRQ});
  EXPECT_EQ(d->head.sample_period_ns, 0u);
  EXPECT_EQ(d->head.waker_cgroup, 0u);
  ASSERT_EQ(d->hops.size(), 2u);
  EXPECT_EQ(d->hops[1].waker_flags, uint32_t{OFFWAKE_WAKER_KTHREAD});
}

TEST(OffwakeRaw, VersionTwoOfEarlierRecordingsStillReads) {
  const std::vector<uint8_t> bytes = old_payload(2, {500'000, 6, 1'234'567}, 1);
  ASSERT_EQ(bytes.size(), 56u + 8u);
  auto d = decode_offwake_raw(bytes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->head.version, 2u);
  EXPECT_EQ(d->head.sample_period_ns, 500'000u);
  EXPECT_EQ(d->head.sampled, 6u);
  EXPECT_EQ(d->head.sampled_ns, 1'234'567u);
  EXPECT_EQ(d->head.waker_cgroup, 0u);  // the hop's bytes are not read as a cgroup
  ASSERT_EQ(d->hops.size(), 1u);
  EXPECT_EQ(d->hops[0].state, 0x1u);
  // A version 2 head cut short is not ours.
  EXPECT_FALSE(decode_offwake_raw(std::span(bytes).first(55)));
}

// A version 3 head cut to a version 2 head's length is not ours either.
TEST(OffwakeRaw, VersionThreeCutShortIsNotOurs) {
  const std::vector<uint8_t> bytes = encode_offwake_raw(head(0));
  EXPECT_FALSE(decode_offwake_raw(std::span(bytes).first(kOffwakeRawV2Size)));
  EXPECT_FALSE(decode_offwake_raw(std::span(bytes).first(sizeof(OffwakeRaw) - 1)));
}

TEST(OffwakeRaw, RoundTripsEveryHopInOrder) {
  const std::vector<OffwakeRawHop> hops = {{0x1, 0}, {0x2, OFFWAKE_WAKER_SOFTIRQ}, {0x402, OFFWAKE_WAKER_KTHREAD}};
  const std::vector<uint8_t> bytes = encode_offwake_raw(head(3), hops);
  ASSERT_EQ(bytes.size(), sizeof(OffwakeRaw) + 3 * sizeof(OffwakeRawHop));
  auto d = decode_offwake_raw(bytes);
  ASSERT_TRUE(d);
  EXPECT_TRUE(same(d->head, head(3)));
  EXPECT_EQ(chain_hops(d->head.chain), 3u);
  EXPECT_EQ(chain_end(d->head.chain), uint32_t{OFFWAKE_CHAIN_END_IRQ});
  ASSERT_EQ(d->hops.size(), 3u);
  for (size_t i = 0; i < hops.size(); ++i) {
    EXPECT_EQ(d->hops[i].state, hops[i].state) << "hop " << i + 2;
    EXPECT_EQ(d->hops[i].waker_flags, hops[i].waker_flags) << "hop " << i + 2;
  }
}

// The bytes are the structs' own, in host order (little-endian where this runs), as the golden
// perf.data files have them.
TEST(OffwakeRaw, EncodesTheHeadFieldByField) {
  OffwakeRaw h = head(1);
  h.waker_cgroup = 0x5566;
  const std::vector<uint8_t> bytes = encode_offwake_raw(h, std::vector<OffwakeRawHop>{{0x1, 0x8}});
  auto u32 = [&](size_t at) { return uint32_t(bytes[at]) | uint32_t(bytes[at + 1]) << 8 | uint32_t(bytes[at + 2]) << 16 | uint32_t(bytes[at + 3]) << 24; };
  EXPECT_EQ(u32(0), 3u);
  EXPECT_EQ(u32(4), 0x2u);
  EXPECT_EQ(u32(8), 7u);
  EXPECT_EQ(u32(12), 0u);
  EXPECT_EQ(u32(16), 123'456'789u);
  EXPECT_EQ(u32(24), uint32_t{OFFWAKE_WAKER_HARDIRQ});
  EXPECT_EQ(u32(28), make_chain(1, OFFWAKE_CHAIN_END_IRQ));
  for (size_t at = 32; at < 56; at += 4) EXPECT_EQ(u32(at), 0u) << at;  // no sampling
  EXPECT_EQ(u32(56), 0x5566u);
  EXPECT_EQ(u32(60), 0u);
  EXPECT_EQ(u32(64), 0x1u);
  EXPECT_EQ(u32(68), 0x8u);
}

TEST(OffwakeRaw, TooShortForAHeadIsNotOurs) {
  const std::vector<uint8_t> bytes = encode_offwake_raw(head(0));
  for (size_t n = 0; n < sizeof(OffwakeRaw); ++n)
    EXPECT_FALSE(decode_offwake_raw(std::span(bytes).first(n))) << n << " bytes";
}

// perf pads the payload so that it and its u32 size end on 8 bytes: the padding is no hop.
TEST(OffwakeRaw, PaddingIsNoHop) {
  std::vector<uint8_t> bytes = encode_offwake_raw(head(1), std::vector<OffwakeRawHop>{{0x1, 0}});
  bytes.resize(bytes.size() + 4, 0);
  auto d = decode_offwake_raw(bytes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->hops.size(), 1u);
}

// A chain that announces more hops than the payload holds (cut short, or garbage) decodes the
// whole hops there are; one announcing fewer decodes only those.
TEST(OffwakeRaw, HopsAreBoundedByThePayloadAndTheAnnouncement) {
  const std::vector<OffwakeRawHop> two = {{0x1, 0}, {0x2, 0}};
  std::vector<uint8_t> bytes = encode_offwake_raw(head(5), two);
  bytes.resize(bytes.size() + 7, 0xff);  // part of a third
  auto d = decode_offwake_raw(bytes);
  ASSERT_TRUE(d);
  ASSERT_EQ(d->hops.size(), 2u);
  EXPECT_EQ(d->hops[1].state, 0x2u);

  auto fewer = decode_offwake_raw(encode_offwake_raw(head(1), two));
  ASSERT_TRUE(fewer);
  EXPECT_EQ(fewer->hops.size(), 1u);
}

// All ones: a version above 3, read as 3, whose head is the whole of OffwakeRaw.
TEST(OffwakeRaw, GarbageDecodesWithinItsBounds) {
  for (size_t n : {32u, 33u, 40u, 55u, 56u, 63u}) EXPECT_FALSE(decode_offwake_raw(std::vector<uint8_t>(n, 0xff))) << n;
  for (size_t n : {64u, 65u, 72u, 79u, 300u}) {
    const std::vector<uint8_t> bytes(n, 0xff);
    auto d = decode_offwake_raw(bytes);
    ASSERT_TRUE(d) << n;
    EXPECT_EQ(chain_hops(d->head.chain), 0xffu);
    EXPECT_EQ(d->hops.size(), (n - sizeof(OffwakeRaw)) / sizeof(OffwakeRawHop)) << n;
  }
}

// --sample-period: the period and the sampled blocks (appended by version 2), its hops after
// the whole head.
TEST(OffwakeRaw, SamplingFieldsAndHopsRoundTrip) {
  OffwakeRaw h = head(2);
  h.sample_period_ns = 500'000;
  h.sampled = 6;
  h.sampled_ns = 1'234'567;
  const std::vector<OffwakeRawHop> hops = {{0x1, 0}, {0x2, OFFWAKE_WAKER_SOFTIRQ}};
  const std::vector<uint8_t> bytes = encode_offwake_raw(h, hops);
  ASSERT_EQ(bytes.size(), sizeof(OffwakeRaw) + 2 * sizeof(OffwakeRawHop));
  auto d = decode_offwake_raw(bytes);
  ASSERT_TRUE(d);
  EXPECT_TRUE(same(d->head, h));
  EXPECT_EQ(d->head.sample_period_ns, 500'000u);
  EXPECT_EQ(d->head.sampled, 6u);
  EXPECT_EQ(d->head.sampled_ns, 1'234'567u);
  ASSERT_EQ(d->hops.size(), 2u);
  EXPECT_EQ(d->hops[1].waker_flags, OFFWAKE_WAKER_SOFTIRQ);
}

// The variance of a sampled time: P^2 per block kept short, less P times their length; none
// without sampling.
TEST(OffwakeRaw, SampledVarianceFromTheBlocksKept) {
  EXPECT_DOUBLE_EQ(sampled_variance(0, 0, 0), 0.0);
  EXPECT_DOUBLE_EQ(sampled_variance(1000, 0, 0), 0.0);
  EXPECT_DOUBLE_EQ(sampled_variance(1000, 3, 600), 3.0 * 1000 * 1000 - 1000.0 * 600);
}

}  // namespace
}  // namespace offwake
