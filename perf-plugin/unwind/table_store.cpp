#include "unwind/table_store.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <thread>

#include "util/clock.h"
#include "util/result.h"

namespace offwake::unwind {

std::string TableStore::key_of(const BinaryRef& b) {
  if (!b.build_id.empty()) return "b:" + b.build_id.hex();
  return "f:" + std::to_string(b.dev) + ":" + std::to_string(b.ino) + ":" + b.path;
}

const StoredTable* TableStore::place(const std::string& key, const BinaryRef& b, Result<UnwindTable> built,
                                     uint64_t ns) {
  auto stored = std::make_unique<StoredTable>();
  stats_.build_ns += ns;
  if (!built) {
    ++stats_.unreadable;
    stored->why = built.error().message();
  } else if (built->rows.empty()) {
    ++stats_.no_rows;
    stored->why = b.path + ": " + built->empty_reason;
  } else if (built->rows.size() > memory_.size() - used_) {
    ++stats_.too_large;
    stored->why = b.path + ": " + std::to_string(built->bytes()) + " bytes of table do not fit the " +
                  std::to_string(capacity_bytes() - bytes()) + " left of --unwind-memory";
  } else {
    const auto t0 = steady_ns();
    stored->first_row = used_;
    stored->rows = static_cast<uint32_t>(built->rows.size());
    std::memcpy(memory_.data() + used_, built->rows.data(), built->bytes());
    used_ += stored->rows;
    ++stats_.tables;
    stats_.rows += stored->rows;
    stats_.build_ns += steady_ns() - t0;
  }
  if (built) {
    stored->table = std::move(built).value();
    stored->table.rows = {};
    stored->table.rows.shrink_to_fit();
  }
  if (!stored->why.empty()) stats_.failed.push_back(stored->why);
  const StoredTable* t = owned_.emplace_back(std::move(stored)).get();
  tables_.emplace(key, t);
  if (!t->table.build_id.empty()) tables_.emplace("b:" + t->table.build_id.hex(), t);
  return t;
}

const StoredTable* TableStore::get(const BinaryRef& b) {
  const std::string key = key_of(b);
  if (auto it = tables_.find(key); it != tables_.end()) return it->second;
  const auto t0 = steady_ns();
  auto built = build_unwind_table(b.open_path);
  return place(key, b, std::move(built), steady_ns() - t0);
}

const StoredTable* TableStore::ready_or_build(const BinaryRef& b) {
  if (!builder_) return get(b);
  const std::string key = key_of(b);
  if (auto it = tables_.find(key); it != tables_.end()) return it->second;
  if (building_.try_emplace(key, b).second) builder_->request(key, b.open_path);
  return nullptr;
}

bool TableStore::place_built(bool all) {
  if (!builder_) return false;
  bool placed = false;
  do {
    std::vector<TableBuilder::Built> built = builder_->take_built(all && !building_.empty());
    for (TableBuilder::Built& t : built) {
      auto it = building_.find(t.key);
      // Built meanwhile on the recorder's thread too (get(), prepare()): that one stays.
      if (!tables_.count(t.key)) {
        ++stats_.built_beside;
        place(t.key, it->second, std::move(t.table), t.ns);
      }
      building_.erase(it);
      placed = true;
    }
  } while (all && !building_.empty());
  return placed;
}

void TableStore::prepare(const std::vector<BinaryRef>& binaries, unsigned threads) {
  std::vector<const BinaryRef*> todo;
  std::map<std::string, bool> seen;
  for (const auto& b : binaries) {
    const std::string key = key_of(b);
    if (tables_.count(key) || !seen.emplace(key, true).second) continue;
    todo.push_back(&b);
  }
  std::vector<std::optional<Result<UnwindTable>>> built(todo.size());
  std::vector<uint64_t> ns(todo.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
      const auto t0 = steady_ns();
      built[i].emplace(build_unwind_table(todo[i]->open_path));
      ns[i] = steady_ns() - t0;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < std::max(1u, threads); ++i) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (size_t i = 0; i < todo.size(); ++i) place(key_of(*todo[i]), *todo[i], std::move(*built[i]), ns[i]);
}

}  // namespace offwake::unwind
