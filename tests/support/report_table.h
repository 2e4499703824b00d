// What perf offwake report's table prints, read back: its times ("12.34 ms", human_ns()).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace offwake::test {

// A time cell of the table, its number and unit ("12.34" and "ms"), in nanoseconds.
inline double parse_human_ns(const std::string& number, const std::string& unit) {
  const double v = std::stod(number);
  if (unit == "ns") return v;
  if (unit == "us") return v * 1e3;
  if (unit == "ms") return v * 1e6;
  return v * 1e9;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The rows of a --stdio table whose blocked stack names `function`: their time and count
// summed, and whether a row's waker line under it names `waker_function` in thread `waker_tid`.
// Rows of an exact recording (no StdErr column).
struct TableRows {
  double ns = 0;
  uint64_t count = 0;
  bool waker_seen = false;
};

inline TableRows rows_naming(const std::string& table, const std::string& function,
                             const std::string& waker_function, uint32_t waker_tid) {
  TableRows t;
  const auto lines = lines_of(table);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(function) == std::string::npos || lines[i].find("woken by") != std::string::npos) continue;
    std::istringstream row(lines[i]);
    std::string total, unit, share, cnt;
    row >> total >> unit >> share >> cnt;
    t.ns += parse_human_ns(total, unit);
    t.count += std::stoull(cnt);
    if (i + 1 < lines.size() && lines[i + 1].find("woken by") != std::string::npos &&
        lines[i + 1].find(waker_function) != std::string::npos &&
        lines[i + 1].find("/" + std::to_string(waker_tid) + ":") != std::string::npos)
      t.waker_seen = true;
  }
  return t;
}

// The count column summed over the table's lines (blocked-stack rows and waker lines alike)
// that `keep(line)` accepts; comment lines are no rows.
template <class Keep>
uint64_t rows_count(const std::string& table, Keep keep) {
  uint64_t n = 0;
  for (const std::string& line : lines_of(table)) {
    std::istringstream cells(line);
    std::string total, unit, share;
    uint64_t count = 0;
    if (line.empty() || line[0] == '#' || !(cells >> total >> unit >> share >> count) || !keep(line)) continue;
    n += count;
  }
  return n;
}

// The time of the table's waker lines ("woken by ...") that hold `text`, summed.
inline double waker_lines_ns(const std::string& table, const std::string& text) {
  double ns = 0;
  for (const std::string& line : lines_of(table)) {
    if (line.find(" woken by ") == std::string::npos || line.find(text) == std::string::npos) continue;
    std::istringstream cells(line);
    std::string number, unit;
    cells >> number >> unit;
    ns += parse_human_ns(number, unit);
  }
  return ns;
}

}  // namespace offwake::test
