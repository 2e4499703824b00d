// The PERF_SAMPLE_RAW payload of an offwake-time sample: what the aggregate knows beyond the
// period. perf script prints it as "BPF output"; our readers decode it. One encoder (the
// recorder's) and one decoder (every reader's), so that the layout is written down once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace offwake {

// The payload's head, in host byte order, as the samples of a recording are.
struct OffwakeRaw {
  uint32_t version = 1;
  uint32_t state = 0;        // task state at switch-out (S = 0x1, D = 0x2, plus modifiers)
  uint64_t count = 0;        // blocks summed in this sample
  uint64_t max_ns = 0;       // the longest of them
  uint32_t waker_flags = 0;  // OFFWAKE_WAKER_* (hardirq, softirq, nmi, none, kthread)
  // --chain-depth > 1: bits 0-7 the hops after the first that follow (each an
  // offwake-hop-blocked and an offwake-hop-waker sample), bits 8-15 OFFWAKE_CHAIN_END_*. 0
  // without a chain (depth 1), so that such a recording is what it always was.
  uint32_t chain = 0;
};
static_assert(sizeof(OffwakeRaw) == 32);
// After OffwakeRaw, one of these per further hop, in hop order (hop 2 first).
struct OffwakeRawHop {
  uint32_t state = 0;        // of the hop's block
  uint32_t waker_flags = 0;  // of the hop's waker
};
static_assert(sizeof(OffwakeRawHop) == 8);
inline uint32_t chain_hops(uint32_t chain) { return chain & 0xff; }
inline uint32_t chain_end(uint32_t chain) { return (chain >> 8) & 0xff; }
inline uint32_t make_chain(uint32_t hops, uint32_t end) { return (hops & 0xff) | (end & 0xff) << 8; }

// The head, then `hops` (as many as chain_hops(head.chain) says, for the readers to find).
std::vector<uint8_t> encode_offwake_raw(const OffwakeRaw& head, std::span<const OffwakeRawHop> hops = {});

struct DecodedRaw {
  OffwakeRaw head;
  // The hops head.chain announces that the payload holds: fewer than announced when it was
  // cut short, never more (perf pads the payload's end).
  std::vector<OffwakeRawHop> hops;
};

// Nullopt when `raw` is too short for a head: a sample written by something else. The version
// is not checked: every recording so far has 1, and a later one would only append fields.
std::optional<DecodedRaw> decode_offwake_raw(std::span<const uint8_t> raw);

}  // namespace offwake
