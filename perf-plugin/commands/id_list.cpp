#include "commands/id_list.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace offwake {
namespace {

constexpr unsigned long kPidMaxLimit = 4194304;  // PID_MAX_LIMIT on 64-bit Linux

Result<uint32_t> parse_id(const std::string& item, std::string_view what) {
  char* end = nullptr;
  errno = 0;
  // strtoul takes "-1" and " 1"; an id is digits only.
  unsigned long v = item.empty() || item[0] < '0' || item[0] > '9' ? 0 : strtoul(item.c_str(), &end, 10);
  if (v == 0 || *end || errno || v > kPidMaxLimit) return Error("'" + item + "' is not a " + std::string(what));
  return static_cast<uint32_t>(v);
}

}  // namespace

Result<std::vector<uint32_t>> parse_id_list(const std::string& text, std::string_view option, std::string_view what) {
  if (text.empty())
    return Error(std::string(option) + " takes a list of " + std::string(what) + "s, not ''");
  std::vector<uint32_t> out;
  size_t from = 0;
  for (;;) {
    size_t comma = text.find(',', from);
    auto id = parse_id(text.substr(from, comma == std::string::npos ? std::string::npos : comma - from), what);
    if (!id) return id.error();
    if (std::find(out.begin(), out.end(), *id) == out.end()) out.push_back(*id);
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

}  // namespace offwake
