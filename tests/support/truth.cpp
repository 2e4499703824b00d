#include "support/truth.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <type_traits>

namespace offwake::test {
namespace {

// One line that starts with a given word: the line, and its "key=value" words.
struct KeyValueLine {
  std::string line;
  std::map<std::string, std::string> fields;

  // Sets `out` to the value of `key`, converted; a line without it is a test failure.
  template <typename T>
  bool take(const std::string& key, T& out) const {
    auto it = fields.find(key);
    if (it == fields.end()) {
      ADD_FAILURE() << "no " << key << "= in the workload's line: " << line;
      return false;
    }
    if constexpr (std::is_same_v<T, std::string>) out = it->second;
    else if constexpr (std::is_same_v<T, uint32_t>) out = static_cast<uint32_t>(std::stoul(it->second));
    else out = std::stoull(it->second);
    return true;
  }
};

std::vector<KeyValueLine> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<KeyValueLine> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    KeyValueLine l{line, {}};
    std::istringstream words(line.substr(prefix.size()));
    for (std::string w; words >> w;) {
      const auto eq = w.find('=');
      if (eq != std::string::npos) l.fields[w.substr(0, eq)] = w.substr(eq + 1);
    }
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace

std::vector<Truth> parse_truth(const std::string& text) {
  std::vector<Truth> out;
  for (const KeyValueLine& l : lines_starting(text, "truth ")) {
    Truth t;
    // Each field is looked up, so that every missing one is named.
    const bool whole = l.take("tid", t.tid) & l.take("function", t.function) & l.take("blocked_ns", t.blocked_ns) &
                       l.take("count", t.count) & l.take("waker_tid", t.waker_tid) &
                       l.take("waker_function", t.waker_function);
    if (whole) out.push_back(std::move(t));
  }
  return out;
}

std::vector<Identity> parse_identity(const std::string& text) {
  std::vector<Identity> out;
  for (const KeyValueLine& l : lines_starting(text, "identity ")) {
    Identity id;
    const bool whole = l.take("tid", id.tid) & l.take("comm", id.comm) & l.take("from_ns", id.from_ns) &
                       l.take("to_ns", id.to_ns);
    if (whole) out.push_back(std::move(id));
  }
  return out;
}

Relay parse_relay(const std::string& text) {
  Relay r;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    sscanf(line.c_str(), "relay first=%u second=%u third=%u", &r.first, &r.second, &r.third);
  for (const Truth& t : parse_truth(text))
    if (r.third && t.tid == r.third) r.third_truth = t;
  return r;
}

}  // namespace offwake::test
