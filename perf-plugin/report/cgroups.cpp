#include "report/cgroups.h"

#include <vector>

namespace offwake::report {

void CgroupTable::observe(const perfdata::Record& r) {
  if (const auto* c = std::get_if<perfdata::CgroupRecord>(&r)) paths_[c->id] = c->path;
}

const std::string& CgroupTable::path(uint64_t id) const {
  static const std::string none, unknown = kUnknownCgroup;
  if (id == 0) return none;
  auto it = paths_.find(id);
  return it == paths_.end() ? unknown : it->second;
}

namespace {

constexpr size_t kContainerIdLength = 64;

bool hex_digits(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return !s.empty();
}

// One path component: the id it holds, or "".
std::string_view id_in(std::string_view component) {
  // A prefix up to the last '-' or ':' goes ("docker-", "lxc.payload:"), then a '.' suffix
  // (".scope").
  if (size_t sep = component.find_last_of("-:"); sep != std::string_view::npos) component = component.substr(sep + 1);
  if (size_t dot = component.find('.'); dot != std::string_view::npos) component = component.substr(0, dot);
  return component.size() == kContainerIdLength && hex_digits(component) ? component : std::string_view();
}

}  // namespace

std::string container_id(std::string_view path) {
  while (!path.empty()) {
    const size_t slash = path.find_last_of('/');
    const std::string_view last = slash == std::string_view::npos ? path : path.substr(slash + 1);
    if (std::string_view id = id_in(last); !id.empty()) return std::string(id);
    if (slash == std::string_view::npos) break;
    path = path.substr(0, slash);
  }
  return "";
}

bool cgroup_under(std::string_view path, std::string_view under) {
  while (under.size() > 1 && under.back() == '/') under.remove_suffix(1);
  if (under == "/") return !path.empty() && path.front() == '/';
  if (path.substr(0, under.size()) != under) return false;
  return path.size() == under.size() || path[under.size()] == '/';
}

}  // namespace offwake::report
