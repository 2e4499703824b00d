// The files of a recording made with --switch-output into a test's directory.
#pragma once

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "support/run.h"

namespace offwake::test {

// DIR/perf.data.<16 digits> (perf's timestamp, YYYYmmddHHMMSS and hundredths), in name order,
// which is time order.
inline std::vector<std::string> window_files(const TempDir& dir) {
  static const std::regex kName(R"(perf\.data\.[0-9]{16})");
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    if (std::regex_match(e.path().filename().string(), kName)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace offwake::test
