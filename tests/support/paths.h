// Where the tests find what the build made (perf offwake, the test workloads and the
// end-to-end tests' programs) and what the source tree holds (the bundled scripts).
// OFFWAKE_BINARY_DIR and OFFWAKE_SOURCE_DIR come from the offwake_test_paths target.
#pragma once

#include <string>

namespace offwake::test {

// The sub-command as built; `perf offwake` runs it when its folder is on PATH.
inline const std::string kOffwake = OFFWAKE_BINARY_DIR "/perf-plugin/perf-offwake";

// Prefix for a command line in which Debian's perf runs `perf offwake`: it finds us on PATH.
inline const std::string kPerfFindsUs = "PATH=" OFFWAKE_BINARY_DIR "/perf-plugin:$PATH ";

// The test workloads (tests/workloads), with the trailing slash: kWorkloads + "wl_pipe".
inline const std::string kWorkloads = OFFWAKE_BINARY_DIR "/tests/workloads/";

// tests/e2e's programs: many short-lived processes, and a PIE target with known functions.
inline const std::string kForkStorm = OFFWAKE_BINARY_DIR "/tests/e2e/fork_storm";
inline const std::string kSymbolsTarget = OFFWAKE_BINARY_DIR "/tests/e2e/symbols_target";

// tests/bench's many-keys workload: 2^DEPTH distinct user call paths, a block at the end of each.
inline const std::string kBenchKeys = OFFWAKE_BINARY_DIR "/tests/bench/bench_keys";

// The bundled scripts (scripts/), with the trailing slash: kScripts + "offwake-collapse.py".
inline const std::string kScripts = OFFWAKE_SOURCE_DIR "/scripts/";

}  // namespace offwake::test
