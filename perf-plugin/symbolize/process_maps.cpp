#include "symbolize/process_maps.h"

namespace offwake::symbolize {

void ProcessMaps::insert(const Mapping& m) {
  if (m.end <= m.start) return;
  auto it = maps_.lower_bound(m.start);
  if (it != maps_.begin()) --it;
  while (it != maps_.end() && it->second.start < m.end) {
    if (it->second.end <= m.start) {
      ++it;
      continue;
    }
    Mapping old = it->second;
    it = maps_.erase(it);
    if (old.start < m.start) {
      Mapping left = old;
      left.end = m.start;
      maps_.emplace(left.start, left);
    }
    if (old.end > m.end) {
      Mapping right = old;
      if (!right.identity) right.pgoff += m.end - old.start;
      right.start = m.end;
      it = maps_.emplace(right.start, right).first;
    }
  }
  maps_[m.start] = m;
}

const Mapping* ProcessMaps::find(uint64_t ip) const {
  auto it = maps_.upper_bound(ip);
  if (it == maps_.begin()) return nullptr;
  --it;
  return ip < it->second.end ? &it->second : nullptr;
}

}  // namespace offwake::symbolize
