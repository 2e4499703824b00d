// The sub-commands of perf-offwake. Each returns the process exit code:
// 0 success, 1 failure at run time, 129 bad usage (as perf's parse-options does).
#pragma once

#include <string>
#include <vector>

namespace offwake {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 129;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);  // args[0] is the command name
};

const std::vector<Command>& commands();

}  // namespace offwake
