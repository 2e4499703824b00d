#include "unwind/process_mappings.h"

#include <algorithm>

namespace offwake::unwind {

void ProcessMappings::add(std::vector<CodeMapping>& list, const CodeMapping& m) {
  ++stats_.mappings;
  // What the new mapping covers was unmapped or replaced (unless the record of what
  // replaced it came first).
  bool older = false;
  std::erase_if(list, [&](const CodeMapping& o) {
    if (!(o.start < m.end && m.start < o.end)) return false;
    if (o.time > m.time) older = true;
    return o.time <= m.time;
  });
  if (older) return;
  list.push_back(m);
}

offwake_unwind_process ProcessMappings::encode(const std::vector<CodeMapping>& ms) {
  offwake_unwind_process v{};
  std::vector<offwake_unwind_mapping> out;
  for (const CodeMapping& m : ms) {
    const StoredTable* t = tables_.get(m.binary);
    auto bias = t->rows ? t->table.bias(m.start, m.pgoff) : std::nullopt;
    if (!bias) {
      ++stats_.without_table;
      continue;
    }
    out.push_back({m.start, m.end, *bias, t->first_row, t->rows});
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.start < b.start; });
  if (out.size() > OFFWAKE_UNWIND_MAX_MAPPINGS) {
    stats_.over_limit += out.size() - OFFWAKE_UNWIND_MAX_MAPPINGS;
    out.resize(OFFWAKE_UNWIND_MAX_MAPPINGS);
  }
  v.n = static_cast<uint32_t>(out.size());
  std::copy(out.begin(), out.end(), v.m);
  return v;
}

void ProcessMappings::publish(uint32_t tgid) {
  auto it = processes_.find(tgid);
  if (it == processes_.end()) return publish_(tgid, nullptr);
  const offwake_unwind_process v = encode(it->second);
  publish_(tgid, &v);
}

void ProcessMappings::map(uint32_t tgid, const CodeMapping& m) {
  auto [it, added] = processes_.try_emplace(tgid);
  stats_.processes += added;
  add(it->second, m);
  publish(tgid);
}

void ProcessMappings::map_all(uint32_t tgid, const std::vector<CodeMapping>& ms) {
  auto [it, added] = processes_.try_emplace(tgid);
  stats_.processes += added;
  for (const auto& m : ms) add(it->second, m);
  publish(tgid);
}

void ProcessMappings::exec(uint32_t tgid, uint64_t time) {
  auto it = processes_.find(tgid);
  if (it == processes_.end()) return;
  if (std::erase_if(it->second, [&](const CodeMapping& m) { return m.time < time; })) publish(tgid);
}

void ProcessMappings::fork(uint32_t parent, uint32_t child) {
  auto it = processes_.find(parent);
  // A child already known mapped code of its own (its exec's records came first).
  if (it == processes_.end() || parent == child || processes_.count(child)) return;
  processes_.emplace(child, it->second);
  ++stats_.processes;
  publish(child);
}

void ProcessMappings::exit(uint32_t tgid) {
  if (processes_.erase(tgid)) publish_(tgid, nullptr);
}

}  // namespace offwake::unwind

