// A recording of a test workload by perf offwake record, made once per test program and kept
// for all its tests (a workload takes about a second to run).
#pragma once

#include <memory>
#include <string>

#include "support/run.h"
#include "support/truth.h"

namespace offwake::test {

struct Recording {
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>();
  std::string data;  // the perf.data file
  RunResult record;  // perf offwake record's output (the workload's truth line is in .out)
  Truth truth;       // the workload's truth line, if it printed exactly one
};

// `perf offwake record OPTIONS -o DATA -- WORKLOAD` (a workload name in build/tests/workloads,
// with its arguments), made on first use.
const Recording& recording(const std::string& workload, const std::string& options = "");

}  // namespace offwake::test
