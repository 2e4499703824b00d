// perf offwake report, end to end as root, on recordings of the test workloads: the table
// shows the workload's blocked stack with the time it measured itself (within 5%) and its
// waker; --folded is byte for byte what scripts/offwake-collapse.py prints under Debian's perf
// (and --wallclock what offwake-wallclock.py prints); streams, filters and bad input.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <sstream>

#include "support/perf_script.h"
#include "support/recording.h"
#include "support/run.h"
#include "support/tolerances.h"
#include "support/usage_error.h"

namespace offwake::test {
namespace {

const std::string kOffwake = OFFWAKE_BINARY_DIR "/perf-plugin/perf-offwake";
const std::string kWorkloads = OFFWAKE_BINARY_DIR "/tests/workloads/";
const std::string kScripts = OFFWAKE_SOURCE_DIR "/scripts/";

RunResult report(const Recording& r, const std::string& args) {
  return run(kOffwake + " report -i " + r.data + " " + args);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// "12.34 ms" in a table cell -> ns.
double parse_human(const std::string& number, const std::string& unit) {
  const double v = std::stod(number);
  if (unit == "ns") return v;
  if (unit == "us") return v * 1e3;
  if (unit == "ms") return v * 1e6;
  return v * 1e9;
}

TEST(Report, TableShowsTheBlockedStackItsTimeAndItsWaker) {
  const Recording& r = recording("wl_pipe", "");
  ASSERT_EQ(r.record.status, 0) << r.record.err;
  ASSERT_GT(r.truth.count, 0u) << r.record.out;
  auto out = report(r, "--tid " + std::to_string(r.truth.tid));
  ASSERT_EQ(out.status, 0) << out.err;
  EXPECT_EQ(out.err, "");
  double ns = 0;
  uint64_t count = 0;
  bool waker_seen = false;
  const auto lines = lines_of(out.out);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(r.truth.function) == std::string::npos || lines[i].find("woken by") != std::string::npos)
      continue;
    std::istringstream row(lines[i]);
    std::string total, unit, share, cnt;
    row >> total >> unit >> share >> cnt;
    ns += parse_human(total, unit);
    count += std::stoull(cnt);
    if (i + 1 < lines.size() && lines[i + 1].find("woken by") != std::string::npos &&
        lines[i + 1].find(r.truth.waker_function) != std::string::npos &&
        lines[i + 1].find("/" + std::to_string(r.truth.waker_tid) + ":") != std::string::npos)
      waker_seen = true;
  }
  // The time within 5% (kBlockedTimeTolerance); the count exact (see check_against_truth in
  // tests/bpf/offwake_bpf_test.cpp for the one way heavy load could make it one off).
  EXPECT_NEAR(ns, static_cast<double>(r.truth.blocked_ns),
              kBlockedTimeTolerance * static_cast<double>(r.truth.blocked_ns))
      << out.out;
  EXPECT_EQ(count, r.truth.count) << out.out;
  EXPECT_TRUE(waker_seen) << "the waker's thread and stack under the row:\n" << out.out;
  EXPECT_NE(out.out.find("# recording counters:"), std::string::npos) << out.out;
}

// The same lines as the bundled script run by the real perf, in the same order.
TEST(Report, FoldedEqualsOffwakeCollapseUnderPerf) {
  for (const char* workload : {"wl_pipe", "wl_condvar"}) {
    SCOPED_TRACE(workload);
    const Recording& r = recording(workload, "");
    ASSERT_EQ(r.record.status, 0) << r.record.err;
    for (const char* opts : {"", "--kernel-only", "--user-only"}) {
      SCOPED_TRACE(opts);
      auto ours = report(r, std::string("--folded ") + opts);
      ASSERT_EQ(ours.status, 0) << ours.err;
      auto perf = run("perf script -i " + r.data + " -s " + kScripts + "offwake-collapse.py" +
                      (*opts ? std::string(" -- ") + opts : ""));
      ASSERT_EQ(perf.status, 0) << perf.err;
      ASSERT_FALSE(ours.out.empty());
      EXPECT_EQ(ours.out, perf.out);
    }
  }
}

TEST(Report, FoldedUnitsAndNoWaker) {
  const Recording& r = recording("wl_pipe", "");
  auto ns = lines_of(report(r, "--folded").out);
  auto us = lines_of(report(r, "--folded --unit us").out);
  ASSERT_EQ(ns.size(), us.size());
  ASSERT_FALSE(ns.empty());
  for (size_t i = 0; i < ns.size(); ++i) {
    const auto a = ns[i].rfind(' '), b = us[i].rfind(' ');
    ASSERT_EQ(ns[i].substr(0, a), us[i].substr(0, b));
    EXPECT_EQ((std::stoull(ns[i].substr(a + 1)) + 500) / 1000, std::stoull(us[i].substr(b + 1)));
  }
  auto blocked_only = report(r, "--folded --no-waker");
  ASSERT_EQ(blocked_only.status, 0) << blocked_only.err;
  bool found = false;
  for (const auto& line : lines_of(blocked_only.out)) {
    EXPECT_EQ(line.find(";--;"), std::string::npos) << line;
    if (line.find(r.truth.function) != std::string::npos) found = true;
  }
  EXPECT_TRUE(found) << blocked_only.out;
}

// --wallclock on an --on-cpu recording: what offwake-wallclock.py prints under the real perf.
TEST(Report, WallclockFoldedEqualsOffwakeWallclockUnderPerf) {
  const Recording& r = recording("wl_spin_block", "--on-cpu");
  ASSERT_EQ(r.record.status, 0) << r.record.err;
  auto ours = report(r, "--folded --wallclock");
  ASSERT_EQ(ours.status, 0) << ours.err;
  auto perf = run("perf script -i " + r.data + " -s " + kScripts + "offwake-wallclock.py");
  ASSERT_EQ(perf.status, 0) << perf.err;
  // Equal weights may come in another order: compare as sets of lines, and the order of weights.
  auto a = lines_of(ours.out), b = lines_of(perf.out);
  ASSERT_FALSE(a.empty());
  std::multiset<std::string> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  EXPECT_EQ(sa, sb);
  EXPECT_NE(ours.out.find("wl_spin_for"), std::string::npos);
  EXPECT_NE(ours.out.find("[off-cpu]"), std::string::npos);
}

// A stream: record to standard output, report from standard input.
TEST(Report, ReadsAStream) {
  TempDir dir;
  auto r = run(kOffwake + " record -o - -- " + kWorkloads + "wl_pipe -n 5 | " + kOffwake +
               " report -i - --folded");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("wl_wait_for_message"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(";--;"), std::string::npos) << r.out;
}

TEST(Report, FiltersAndMinimum) {
  const Recording& r = recording("wl_pipe", "");
  auto only = report(r, "--folded --comm wl_pipe");
  ASSERT_EQ(only.status, 0) << only.err;
  for (const auto& line : lines_of(only.out)) EXPECT_EQ(line.rfind("wl_pipe;", 0), 0u) << line;
  auto none = report(r, "--folded --pid 1");
  ASSERT_EQ(none.status, 0) << none.err;
  EXPECT_EQ(none.out, "");
  // --min 50%: at most one stack can hold half of the time.
  auto big = lines_of(report(r, "--folded --min 50%").out);
  EXPECT_LE(big.size(), 1u);
  auto all = lines_of(report(r, "--folded").out);
  auto timed = lines_of(report(r, "--folded --min 1ms").out);
  EXPECT_LE(timed.size(), all.size());
  for (const auto& line : timed) EXPECT_GE(std::stoull(line.substr(line.rfind(' ') + 1)), 1000000u) << line;
}

// Bad input: a status scripts can rely on, never a crash. A file that cannot be read is one line;
// a usage error is perf's: the first line says what is wrong, the usage follows.
TEST(Report, BadInputIsOneLine) {
  TempDir dir;
  struct Case {
    std::string args;
    int status;
  } cases[] = {
      {"-i " + dir.file("missing.data"), 1},
      {"--min 5", 129},
      {"--min -1ms", 129},
      {"--sort bogus", 129},
      {"--unit ms --folded", 129},
      {"--pid x1", 129},
      {"--kernel-only --user-only", 129},
      {"--no-such-option", 129},
      {"stray", 129},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    auto r = run(kOffwake + " report " + c.args);
    if (c.status == 129) {
      // A usage error: perf's usage follows the first line (Options.EveryBadReportOptionIsNamed).
      expect_usage_error(r, "", "report");
      continue;
    }
    EXPECT_EQ(r.status, c.status) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
  // A truncated recording.
  const Recording& rec = recording("wl_pipe", "");
  const std::string cut = dir.file("cut.data");
  ASSERT_EQ(run("head -c 3000 " + rec.data + " > " + cut).status, 0);
  auto r = run(kOffwake + " report -i " + cut);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace offwake::test
