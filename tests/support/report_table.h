// What perf offwake report's table prints, read back: its times ("12.34 ms", human_ns()).
#pragma once

#include <string>

namespace offwake::test {

// A time cell of the table, its number and unit ("12.34" and "ms"), in nanoseconds.
inline double parse_human_ns(const std::string& number, const std::string& unit) {
  const double v = std::stod(number);
  if (unit == "ns") return v;
  if (unit == "us") return v * 1e3;
  if (unit == "ms") return v * 1e6;
  return v * 1e9;
}

}  // namespace offwake::test
