#include "unwind/process_mappings.h"

#include <algorithm>

namespace offwake::unwind {

// The table and bias are looked up once, here: every later write of the process reuses them.
void ProcessMappings::add(std::vector<CodeMapping>& list, CodeMapping m) {
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
  const StoredTable* t = tables_.get(m.binary);
  auto bias = t->rows ? t->table.bias(m.start, m.pgoff) : std::nullopt;
  if (bias)
    m.resolved = {m.start, m.end, *bias, t->first_row, t->rows};
  else
    ++stats_.without_table;
  list.push_back(std::move(m));
}

// The BPF value: the mappings with a table, sorted by address for the walker's search.
void ProcessMappings::publish(uint32_t tgid) {
  auto it = processes_.find(tgid);
  if (it == processes_.end()) return publish_(tgid, nullptr);
  std::vector<offwake_unwind_mapping> out;
  for (const CodeMapping& m : it->second)
    if (m.resolved.rows) out.push_back(m.resolved);
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.start < b.start; });
  over_limit_[tgid] = out.size() > OFFWAKE_UNWIND_MAX_MAPPINGS ? out.size() - OFFWAKE_UNWIND_MAX_MAPPINGS : 0;
  out.resize(std::min<size_t>(out.size(), OFFWAKE_UNWIND_MAX_MAPPINGS));
  offwake_unwind_process v{};
  v.n = static_cast<uint32_t>(out.size());
  v.generation = generation_ = offwake_unwind_next_generation(generation_);
  std::copy(out.begin(), out.end(), v.m);
  publish_(tgid, &v);
}

ProcessMappingStats ProcessMappings::stats() const {
  ProcessMappingStats s = stats_;
  for (const auto& [tgid, n] : over_limit_) s.over_limit += n;
  return s;
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

