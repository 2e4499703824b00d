// The PERF_SAMPLE_RAW payload of an offwake-time sample: what the aggregate knows beyond the
// period. perf script prints it as "BPF output"; our readers decode it. One encoder (the
// recorder's) and one decoder (every reader's), so that the layout is written down once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace offwake {

// The payload's head, in host byte order, as the samples of a recording are. Version 1 (32
// bytes) was every recording without --sample-period, version 2 (56 bytes) one with it: it
// appends the sampling fields. Version 3 (64 bytes), every recording since, appends the
// waker's cgroup (the sampling fields zero without --sample-period).
constexpr uint32_t kOffwakeRawVersion = 3;
struct OffwakeRaw {
  uint32_t version = kOffwakeRawVersion;
  uint32_t state = 0;        // task state at switch-out (S = 0x1, D = 0x2, plus modifiers)
  uint64_t count = 0;        // blocks summed in this sample
  uint64_t max_ns = 0;       // the longest of them
  uint32_t waker_flags = 0;  // OFFWAKE_WAKER_* (hardirq, softirq, nmi, none, kthread)
  // --chain-depth > 1: bits 0-7 the hops after the first that follow (each an
  // offwake-hop-blocked and an offwake-hop-waker sample), bits 8-15 OFFWAKE_CHAIN_END_*. 0
  // without a chain (depth 1), so that such a recording is what it always was.
  uint32_t chain = 0;
  // Version 2 (--sample-period): the period, and of the blocks summed here those shorter than
  // it, which were kept with probability length/period and weigh the period: how many, and
  // their true summed length. The period of the sample is then an estimate.
  uint64_t sample_period_ns = 0;
  uint64_t sampled = 0;
  uint64_t sampled_ns = 0;
  // Version 3: the waker's cgroup v2 id at the wakeup (the offwake-time sample's own
  // PERF_SAMPLE_CGROUP is the blocked thread's); 0 for an interrupt or an unknown waker, and in
  // a file of an earlier version. Its path is in the file's PERF_RECORD_CGROUP records.
  uint64_t waker_cgroup = 0;
};
static_assert(sizeof(OffwakeRaw) == 64);
// The head's size in a version (3 and later: the whole of OffwakeRaw).
constexpr size_t kOffwakeRawV1Size = 32;
constexpr size_t kOffwakeRawV2Size = 56;
inline size_t offwake_raw_head_size(uint32_t version) {
  return version < 2 ? kOffwakeRawV1Size : version == 2 ? kOffwakeRawV2Size : sizeof(OffwakeRaw);
}

// The estimated variance (ns^2) of a sampled time (--sample-period P): a block of length d < P
// adds P with probability d/P, so its variance is P*d - d^2; over the blocks kept, each seen
// with probability d/P, Σ(P^2 - P*d) = P^2*sampled - P*sampled_ns estimates the sum of those
// without bias. Blocks of P or longer are all kept, exactly: no variance. 0 without sampling.
inline double sampled_variance(uint64_t period_ns, uint64_t sampled, uint64_t sampled_ns) {
  const double p = static_cast<double>(period_ns);
  const double v = p * p * static_cast<double>(sampled) - p * static_cast<double>(sampled_ns);
  return v > 0 ? v : 0;
}
// After OffwakeRaw, one of these per further hop, in hop order (hop 2 first).
struct OffwakeRawHop {
  uint32_t state = 0;        // of the hop's block
  uint32_t waker_flags = 0;  // of the hop's waker
};
static_assert(sizeof(OffwakeRawHop) == 8);
inline uint32_t chain_hops(uint32_t chain) { return chain & 0xff; }
inline uint32_t chain_end(uint32_t chain) { return (chain >> 8) & 0xff; }
inline uint32_t make_chain(uint32_t hops, uint32_t end) { return (hops & 0xff) | (end & 0xff) << 8; }

// The head (its version's size), then `hops` (as many as chain_hops(head.chain) says, for the
// readers to find).
std::vector<uint8_t> encode_offwake_raw(const OffwakeRaw& head, std::span<const OffwakeRawHop> hops = {});

struct DecodedRaw {
  OffwakeRaw head;
  // The hops head.chain announces that the payload holds: fewer than announced when it was
  // cut short, never more (perf pads the payload's end).
  std::vector<OffwakeRawHop> hops;
};

// Nullopt when `raw` is too short for its version's head: a sample written by something else.
// The fields an older version lacks are zero. A version above 3 is read as 3: a later one
// would only append fields.
std::optional<DecodedRaw> decode_offwake_raw(std::span<const uint8_t> raw);

// How many blocks an offwake-time sample sums: its raw data's count, or one (a sample without
// the raw data, or with a count of 0, stands for itself).
inline uint64_t blocks_summed(const std::optional<DecodedRaw>& raw) {
  return raw && raw->head.count ? raw->head.count : 1;
}

}  // namespace offwake
