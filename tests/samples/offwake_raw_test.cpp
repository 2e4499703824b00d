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
         a.waker_flags == b.waker_flags && a.chain == b.chain;
}

TEST(OffwakeRaw, RoundTripsWithoutAChain) {
  const std::vector<uint8_t> bytes = encode_offwake_raw(head(0));
  ASSERT_EQ(bytes.size(), kOffwakeRawV1Size);
  auto d = decode_offwake_raw(bytes);
  ASSERT_TRUE(d);
  EXPECT_TRUE(same(d->head, head(0)));
  EXPECT_EQ(d->head.version, 1u);
  EXPECT_TRUE(d->hops.empty());
}

TEST(OffwakeRaw, RoundTripsEveryHopInOrder) {
  const std::vector<OffwakeRawHop> hops = {{0x1, 0}, {0x2, OFFWAKE_WAKER_SOFTIRQ}, {0x402, OFFWAKE_WAKER_KTHREAD}};
  const std::vector<uint8_t> bytes = encode_offwake_raw(head(3), hops);
  ASSERT_EQ(bytes.size(), kOffwakeRawV1Size + 3 * sizeof(OffwakeRawHop));
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
  const std::vector<uint8_t> bytes = encode_offwake_raw(head(1), std::vector<OffwakeRawHop>{{0x1, 0x8}});
  auto u32 = [&](size_t at) { return uint32_t(bytes[at]) | uint32_t(bytes[at + 1]) << 8 | uint32_t(bytes[at + 2]) << 16 | uint32_t(bytes[at + 3]) << 24; };
  EXPECT_EQ(u32(0), 1u);
  EXPECT_EQ(u32(4), 0x2u);
  EXPECT_EQ(u32(8), 7u);
  EXPECT_EQ(u32(12), 0u);
  EXPECT_EQ(u32(16), 123'456'789u);
  EXPECT_EQ(u32(24), uint32_t{OFFWAKE_WAKER_HARDIRQ});
  EXPECT_EQ(u32(28), make_chain(1, OFFWAKE_CHAIN_END_IRQ));
  EXPECT_EQ(u32(32), 0x1u);
  EXPECT_EQ(u32(36), 0x8u);
}

TEST(OffwakeRaw, TooShortForAHeadIsNotOurs) {
  const std::vector<uint8_t> bytes = encode_offwake_raw(head(0));
  for (size_t n = 0; n < kOffwakeRawV1Size; ++n)
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

// All ones: a version above 2, read as 2, whose head is the whole of OffwakeRaw.
TEST(OffwakeRaw, GarbageDecodesWithinItsBounds) {
  for (size_t n : {32u, 33u, 40u, 55u}) EXPECT_FALSE(decode_offwake_raw(std::vector<uint8_t>(n, 0xff))) << n;
  for (size_t n : {56u, 57u, 64u, 71u, 300u}) {
    const std::vector<uint8_t> bytes(n, 0xff);
    auto d = decode_offwake_raw(bytes);
    ASSERT_TRUE(d) << n;
    EXPECT_EQ(chain_hops(d->head.chain), 0xffu);
    EXPECT_EQ(d->hops.size(), (n - sizeof(OffwakeRaw)) / sizeof(OffwakeRawHop)) << n;
  }
}

// --sample-period: version 2 appends the period and the sampled blocks; its hops follow the
// longer head, and a version 2 head cut short is not ours.
TEST(OffwakeRaw, VersionTwoCarriesTheSamplingAndItsHops) {
  OffwakeRaw h = head(2);
  h.version = 2;
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
  EXPECT_FALSE(decode_offwake_raw(std::span(bytes).first(sizeof(OffwakeRaw) - 1)));
  // A version 1 head leaves the sampling fields zero.
  auto v1 = decode_offwake_raw(encode_offwake_raw(head(0)));
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->head.sample_period_ns, 0u);
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
