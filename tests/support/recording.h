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

// Two processes of three threads with their own comms and truths, started by one shell that
// waits for them: wl_sleep -n 20 -m 10 (woken by the timer) and wl_condvar -n 20 -m 10 (a
// waiter woken by its signaller thread). The filters' tests (report_test, sample_filters_test)
// read such a recording with and without a filter.
struct SleeperAndWaiter {
  RunResult record;       // perf offwake record's output
  Truth sleeper, waiter;  // wl_sleep_for's and wl_wait_for_signal's truth
  // The recording was made and both truths were printed (a test failure where not).
  void expect_recorded() const;
};

// `perf offwake record OPTIONS -o DATA` of the two; `pinned`: wl_sleep on cpu 0 and
// wl_condvar on cpu 1 (taskset), so that where a block ended is known.
SleeperAndWaiter record_sleeper_and_waiter(const std::string& data, const std::string& options, bool pinned);

}  // namespace offwake::test
