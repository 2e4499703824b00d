#include "samples/offwake_raw.h"

#include <algorithm>
#include <cstring>

namespace offwake {

std::vector<uint8_t> encode_offwake_raw(const OffwakeRaw& head, std::span<const OffwakeRawHop> hops) {
  const size_t size = offwake_raw_head_size(head.version);
  std::vector<uint8_t> out(size + hops.size_bytes());
  std::memcpy(out.data(), &head, size);
  if (!hops.empty()) std::memcpy(out.data() + size, hops.data(), hops.size_bytes());
  return out;
}

std::optional<DecodedRaw> decode_offwake_raw(std::span<const uint8_t> raw) {
  DecodedRaw d;
  if (raw.size() < kOffwakeRawV1Size) return std::nullopt;
  uint32_t version = 0;
  std::memcpy(&version, raw.data(), sizeof version);
  const size_t size = offwake_raw_head_size(version);
  if (raw.size() < size) return std::nullopt;
  // The head is plain bytes in the struct's layout; what an older version lacks stays zero.
  std::memcpy(static_cast<void*>(&d.head), raw.data(), size);
  const size_t held = (raw.size() - size) / sizeof(OffwakeRawHop);
  d.hops.resize(std::min<size_t>(chain_hops(d.head.chain), held));
  if (!d.hops.empty()) std::memcpy(d.hops.data(), raw.data() + size, d.hops.size() * sizeof(OffwakeRawHop));
  return d;
}

}  // namespace offwake
