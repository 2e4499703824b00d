#include "unwind/process_mappings.h"

#include <algorithm>
#include <vector>

#include "util/clock.h"

namespace offwake::unwind {

// The table and bias are looked up once, here (or once the table is built, resolve_awaiting()):
// every later write of the process reuses them.
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
  m.awaiting_table = !resolve(m);
  list.push_back(std::move(m));
}

bool ProcessMappings::resolve(CodeMapping& m) {
  const StoredTable* t = tables_.ready_or_build(m.binary);
  if (!t) return false;
  auto bias = t->rows ? t->table.bias(m.start, m.pgoff) : std::nullopt;
  if (bias)
    m.resolved = {m.start, m.end, *bias, t->first_row, t->rows};
  else
    ++stats_.without_table;
  return true;
}

void ProcessMappings::resolve_awaiting() {
  const uint64_t now = steady_ns();
  std::vector<uint32_t> ready;
  for (const auto& [tgid, since] : awaiting_) {
    auto p = processes_.find(tgid);  // there: exit() forgets both
    if (p == processes_.end()) continue;
    bool resolved = false;
    for (CodeMapping& m : p->second)
      if (m.awaiting_table && resolve(m)) {
        m.awaiting_table = false;
        resolved = true;
      }
    if (!resolved) continue;
    stats_.longest_wait_ns = std::max(stats_.longest_wait_ns, now - since);
    ready.push_back(tgid);
  }
  for (uint32_t tgid : ready) publish(tgid);  // no longer awaiting, unless another table is still built
}

// The BPF value: the mappings with a table, sorted by address for the walker's search.
void ProcessMappings::publish(uint32_t tgid) {
  auto it = processes_.find(tgid);
  if (it == processes_.end()) return publish_(tgid, nullptr);
  std::vector<offwake_unwind_mapping> out;
  uint32_t awaiting = 0;
  for (const CodeMapping& m : it->second) {
    if (m.resolved.rows) out.push_back(m.resolved);
    awaiting += m.awaiting_table;
  }
  if (!awaiting)
    awaiting_.erase(tgid);
  else if (awaiting_.try_emplace(tgid, steady_ns()).second)
    ++stats_.awaited;
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.start < b.start; });
  over_limit_[tgid] = out.size() > OFFWAKE_UNWIND_MAX_MAPPINGS ? out.size() - OFFWAKE_UNWIND_MAX_MAPPINGS : 0;
  out.resize(std::min<size_t>(out.size(), OFFWAKE_UNWIND_MAX_MAPPINGS));
  offwake_unwind_process v{};
  v.n = static_cast<uint32_t>(out.size());
  v.generation = generation_ = offwake_unwind_next_generation(generation_);
  v.building = awaiting;
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
  awaiting_.erase(tgid);
  if (processes_.erase(tgid)) publish_(tgid, nullptr);
}

}  // namespace offwake::unwind

