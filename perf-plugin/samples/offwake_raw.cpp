#include "samples/offwake_raw.h"

#include <algorithm>
#include <cstring>

namespace offwake {

std::vector<uint8_t> encode_offwake_raw(const OffwakeRaw& head, std::span<const OffwakeRawHop> hops) {
  std::vector<uint8_t> out(sizeof head + hops.size_bytes());
  std::memcpy(out.data(), &head, sizeof head);
  if (!hops.empty()) std::memcpy(out.data() + sizeof head, hops.data(), hops.size_bytes());
  return out;
}

std::optional<DecodedRaw> decode_offwake_raw(std::span<const uint8_t> raw) {
  DecodedRaw d;
  if (raw.size() < sizeof d.head) return std::nullopt;
  std::memcpy(&d.head, raw.data(), sizeof d.head);
  const size_t held = (raw.size() - sizeof d.head) / sizeof(OffwakeRawHop);
  d.hops.resize(std::min<size_t>(chain_hops(d.head.chain), held));
  if (!d.hops.empty()) std::memcpy(d.hops.data(), raw.data() + sizeof d.head, d.hops.size() * sizeof(OffwakeRawHop));
  return d;
}

}  // namespace offwake
