// End to end, as root: the bundled scripts (scripts/offwake-*.py) run under the real perf
// (Debian's perf 6.1, `perf script -i FILE -s SCRIPT`) on recordings of the test workloads.
// Their folded stacks, tables and flame graphs must name the workload's blocking function and
// its waker, with the time the workload measured itself (within 5%).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>

#include "support/paths.h"
#include "support/perf_script.h"
#include "support/recording.h"
#include "support/run.h"
#include "support/tolerances.h"
#include "support/truth.h"

namespace offwake::test {
namespace {

// One recording of a workload, made once for all tests of this file; wl_spin_block with
// --on-cpu: the scripts must skip the cpu-clock samples.
const Recording& recording(const std::string& workload) {
  return test::recording(workload, workload == "wl_spin_block" ? "--on-cpu" : "");
}

// `perf script -i DATA -s scripts/NAME [-- ARGS]`.
RunResult perf_script(const Recording& r, const std::string& name, const std::string& args = "") {
  return run("perf script -i " + r.data + " -s " + kScripts + name + (args.empty() ? "" : " -- " + args));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Within 5% (kBlockedTimeTolerance, support/tolerances.h).
void expect_within_5_percent(double recorded, uint64_t truth) {
  ASSERT_GT(truth, 0u);
  double err = std::abs(recorded - static_cast<double>(truth)) / truth;
  EXPECT_LT(err, kBlockedTimeTolerance) << "recorded " << recorded << " ns, truth " << truth << " ns";
}

// One line of offwake-collapse output: "target;frames;--;waker frames;waker_comm N".
struct Folded {
  std::vector<std::string> target, waker;  // target: comm first; waker: leaf first, comm last
  uint64_t ns = 0;
};

std::vector<Folded> parse_folded(const std::string& text) {
  std::vector<Folded> out;
  for (const std::string& line : lines_of(text)) {
    size_t space = line.rfind(' ');
    if (space == std::string::npos) {
      ADD_FAILURE() << "not a folded line: " << line;
      continue;
    }
    Folded f;
    f.ns = std::stoull(line.substr(space + 1));
    bool after = false;
    for (const std::string& frame : split(line.substr(0, space), ';')) {
      if (frame == "--" && !after) {
        after = true;
        continue;
      }
      (after ? f.waker : f.target).push_back(frame);
    }
    EXPECT_TRUE(after) << "no separator in " << line;
    out.push_back(f);
  }
  return out;
}

// The folded time of the truth's blocking function with the truth's waker function.
uint64_t truth_ns(const std::vector<Folded>& folded, const Truth& t, size_t* lines = nullptr) {
  uint64_t ns = 0;
  size_t n = 0;
  for (const Folded& f : folded)
    if (contains(f.target, t.function) && contains(f.waker, t.waker_function)) {
      ns += f.ns;
      ++n;
    }
  if (lines) *lines = n;
  return ns;
}

// Blocked time of the truth's function whose waker was never seen (a wakeup the kernel did
// not trace): as rarely as the truth allows (max_missed_ns, support/tolerances.h), and the
// recording's summary must have counted such blocks.
uint64_t unseen_waker_ns(const std::vector<Folded>& folded, const Truth& t) {
  uint64_t ns = 0;
  for (const Folded& f : folded)
    if (contains(f.target, t.function) && contains(f.waker, "[no_waker_seen]")) ns += f.ns;
  return ns;
}

class Workload : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    r_ = &recording(GetParam());
    ASSERT_EQ(r_->record.status, 0) << r_->record.err;
    ASSERT_GT(r_->truth.blocked_ns, 0u) << "no truth line in: " << r_->record.out;
  }
  const Recording* r_ = nullptr;
};

TEST_P(Workload, CollapseFoldsBlockedAndWakerStacksWithTruthTime) {
  auto res = perf_script(*r_, "offwake-collapse.py");
  ASSERT_EQ(res.status, 0) << res.err;
  EXPECT_EQ(res.err, "");
  auto folded = parse_folded(res.out);
  size_t lines = 0;
  uint64_t ns = truth_ns(folded, r_->truth, &lines);
  ASSERT_GE(lines, 1u) << "no line with " << r_->truth.function << " woken from "
                       << r_->truth.waker_function << " in:\n" << res.out;
  const Truth& t = r_->truth;
  const uint64_t unseen = unseen_waker_ns(folded, t);
  EXPECT_LE(unseen, max_missed_ns(t.blocked_ns, t.count)) << "ns without a waker, more than the truth allows";
  if (unseen) {
    EXPECT_GT(blocks_without_waker(r_->record.err), 0u) << "uncounted blocks without a waker";
  }
  expect_within_5_percent(ns + unseen, t.blocked_ns);
  uint64_t late_ns = 0;
  for (const Folded& f : folded) {
    if (!contains(f.target, t.function) || contains(f.waker, "[no_waker_seen]")) continue;
    EXPECT_EQ(f.target.front(), GetParam());  // the comm comes first
    // A block whose switch-in was never traced has no kernel stack (counted as ended late):
    // as rarely as the truth allows, below.
    if (!contains(f.target, "do_syscall_64") && blocks_ended_late(r_->record.err) > 0) {
      late_ns += f.ns;
      continue;
    }
    EXPECT_TRUE(contains(f.target, "do_syscall_64")) << "kernel frames";
    // Root to leaf: main comes before the blocking function, the kernel after it.
    auto pos = [&](const std::string& s) { return std::find(f.target.begin(), f.target.end(), s); };
    if (contains(f.target, "main")) {
      EXPECT_LT(pos("main"), pos(r_->truth.function));
    }
    EXPECT_LT(pos(r_->truth.function), pos("do_syscall_64"));
    EXPECT_EQ(f.waker.front(), "try_to_wake_up") << "waker stack leaf first";
  }
  EXPECT_LE(late_ns, max_missed_ns(t.blocked_ns, t.count)) << "ns without a kernel stack, more than the truth allows";
  // Sorted by stack text: the output is deterministic.
  auto sorted = lines_of(res.out);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, lines_of(res.out));
}

TEST_P(Workload, TopNamesBlockingFunctionTimeAndWaker) {
  auto res = perf_script(*r_, "offwake-top.py");
  ASSERT_EQ(res.status, 0) << res.err;
  EXPECT_EQ(res.err, "");
  auto lines = lines_of(res.out);
  ASSERT_GE(lines.size(), 3u) << res.out;
  EXPECT_NE(lines[0].find("BLOCKED STACK"), std::string::npos) << "header: " << lines[0];
  // The blocking function's stack is among the first three ranked rows, its waker below it.
  for (size_t i = 1; i < lines.size(); ++i) {
    std::istringstream row(lines[i]);
    std::string rank, value, unit;
    row >> rank >> value >> unit;
    if (lines[i].find(r_->truth.function) == std::string::npos || rank == "woken") continue;
    EXPECT_LE(std::stoi(rank), 3) << res.out;
    static const std::map<std::string, double> kUnit = {
        {"ns", 1}, {"us", 1e3}, {"\u00b5s", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    ASSERT_TRUE(kUnit.count(unit)) << lines[i];
    // A block whose switch-in the kernel did not trace (counted as ended late) lost its
    // kernel stack, so its time is under another row: allowed for, as rarely as the truth allows
    // (max_missed_ns, support/tolerances.h), and only if the recording counted such a block.
    const double recorded = std::stod(value) * kUnit.at(unit);
    const double late = blocks_ended_late(r_->record.err) == 0
                            ? 0.0
                            : static_cast<double>(max_missed_ns(r_->truth.blocked_ns, r_->truth.count));
    const double least = (1 - kBlockedTimeTolerance) * static_cast<double>(r_->truth.blocked_ns);
    if (late == 0 || recorded > least)
      expect_within_5_percent(recorded, r_->truth.blocked_ns);
    else
      EXPECT_GE(recorded, least - late) << r_->record.err;
    ASSERT_LT(i + 1, lines.size());
    EXPECT_NE(lines[i + 1].find("woken by"), std::string::npos) << lines[i + 1];
    EXPECT_NE(lines[i + 1].find(r_->truth.waker_function), std::string::npos) << res.out;
    return;
  }
  ADD_FAILURE() << "no row for " << r_->truth.function << " in:\n" << res.out;
}

// The <title>s of an SVG, one per line, if python3's XML parser accepts the file.
RunResult svg_titles(const std::string& path) {
  return run("python3 -c 'import sys, xml.dom.minidom as m\n"
             "d = m.parse(sys.argv[1])\n"
             "assert d.documentElement.tagName == \"svg\"\n"
             "for t in d.getElementsByTagName(\"title\"): print(t.firstChild.data)' " + path);
}

// The time in a title "name (1.23 ms, 45.67%)".
double title_ns(const std::string& title) {
  size_t open = title.rfind(" (");
  std::istringstream in(title.substr(open + 2));
  double value;
  std::string unit;
  in >> value >> unit;
  static const std::map<std::string, double> kUnit = {{"ns,", 1}, {"us,", 1e3}, {"ms,", 1e6}, {"s,", 1e9}};
  return kUnit.count(unit) ? value * kUnit.at(unit) : -1;
}

TEST_P(Workload, FlamegraphIsSelfContainedSvgWithBothStacks) {
  const std::string svg = r_->dir->file(GetParam() + ".svg");
  auto res = perf_script(*r_, "offwake-flamegraph.py", "-o " + svg);
  ASSERT_EQ(res.status, 0) << res.err;
  struct stat st {};
  ASSERT_EQ(stat(svg.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "as perf offwake's own outputs";
  auto titles = svg_titles(svg);
  ASSERT_EQ(titles.status, 0) << "not well-formed: " << titles.err;
  bool separator = false, waker = false;
  double function_ns = 0;
  for (const std::string& t : lines_of(titles.out)) {
    if (t.rfind("-- (", 0) == 0) separator = true;
    if (t.rfind(r_->truth.waker_function + " (", 0) == 0) waker = true;
    if (t.rfind(r_->truth.function + " (", 0) == 0) function_ns += title_ns(t);
  }
  EXPECT_TRUE(separator) << titles.out;
  EXPECT_TRUE(waker) << r_->truth.waker_function << " not in:\n" << titles.out;
  expect_within_5_percent(function_ns, r_->truth.blocked_ns);

  std::string text = read_file(svg);
  size_t https = 0, ns_refs = 0;
  for (size_t p = text.find("http"); p != std::string::npos; p = text.find("http", p + 1)) ++https;
  for (size_t p = text.find("\"http://www.w3.org/2000/svg\""); p != std::string::npos;
       p = text.find("\"http://www.w3.org/2000/svg\"", p + 1))
    ++ns_refs;
  EXPECT_EQ(ns_refs, 1u);
  EXPECT_EQ(https, 1u) << "only the SVG namespace may be a URL";
  EXPECT_EQ(text.find("<script"), std::string::npos);
  EXPECT_EQ(text.find("href"), std::string::npos);
}

// Every bundled script prints the same under our host (`perf offwake script -s`, which hands
// the script the waker in the blocked sample's dict) as under perf's (which the script pairs
// with the offwake-waker sample that follows).
TEST_P(Workload, BothHostsAgree) {
  const Recording& r = recording(GetParam());
  TempDir out;
  for (const std::string name : {"offwake-collapse.py", "offwake-top.py", "offwake-wallclock.py"}) {
    auto perfs = perf_script(r, name);
    auto ours = run(kOffwake + " script -i " + r.data + " -s " + kScripts + name);
    EXPECT_EQ(perfs.status, 0) << name << ": " << perfs.err;
    EXPECT_EQ(ours.status, 0) << name << ": " << ours.err;
    EXPECT_FALSE(ours.out.empty()) << name;
    EXPECT_EQ(ours.out, perfs.out) << name;
  }
  auto perf_svg = perf_script(r, "offwake-flamegraph.py", "-o " + out.file("perf.svg"));
  auto our_svg = run(kOffwake + " script -i " + r.data + " -s " + kScripts + "offwake-flamegraph.py -- -o " +
                     out.file("ours.svg"));
  ASSERT_EQ(perf_svg.status, 0) << perf_svg.err;
  ASSERT_EQ(our_svg.status, 0) << our_svg.err;
  EXPECT_EQ(read_file(out.file("ours.svg")), read_file(out.file("perf.svg")));
}

INSTANTIATE_TEST_SUITE_P(Scripts, Workload,
                         ::testing::Values("wl_condvar", "wl_pipe", "wl_sleep", "wl_spin_block"));

TEST(CollapseOptions, PidTidNamesBlockedThreadAndWaker) {
  const Recording& r = recording("wl_pipe");
  ASSERT_GT(r.truth.blocked_ns, 0u) << r.record.out << r.record.err;
  auto res = perf_script(r, "offwake-collapse.py", "--pid-tid");
  ASSERT_EQ(res.status, 0) << res.err;
  Truth t = r.truth;
  bool found = false;
  for (const Folded& f : parse_folded(res.out)) {
    if (!contains(f.target, t.function)) continue;
    found = true;
    const std::string& target = f.target.front();
    const std::string& waker = f.waker.back();
    EXPECT_EQ(target.rfind("wl_pipe-", 0), 0u) << target;
    EXPECT_EQ(target.substr(target.size() - std::to_string(t.tid).size() - 1), "/" + std::to_string(t.tid));
    // The waker is the parent process: pid = tid = waker_tid.
    EXPECT_EQ(waker, "wl_pipe-" + std::to_string(t.waker_tid) + "/" + std::to_string(t.waker_tid));
  }
  EXPECT_TRUE(found) << res.out;

  // Interrupt wakers stay bare: their ids are not threads.
  const Recording& s = recording("wl_sleep");
  auto sleep = perf_script(s, "offwake-collapse.py", "--pid-tid");
  ASSERT_EQ(sleep.status, 0) << sleep.err;
  size_t hardirq = 0;
  for (const Folded& f : parse_folded(sleep.out))
    if (contains(f.target, "wl_sleep_for")) hardirq += f.waker.back() == "[hardirq]";
  EXPECT_GT(hardirq, 0u) << sleep.out;
}

TEST(CollapseOptions, MinDropsSmallLines) {
  const Recording& r = recording("wl_condvar");
  auto all = parse_folded(perf_script(r, "offwake-collapse.py").out);
  ASSERT_GE(all.size(), 2u);
  uint64_t largest = 0;
  for (const Folded& f : all) largest = std::max(largest, f.ns);
  auto res = perf_script(r, "offwake-collapse.py", "--min " + std::to_string(largest));
  ASSERT_EQ(res.status, 0) << res.err;
  auto kept = parse_folded(res.out);
  ASSERT_GE(kept.size(), 1u);
  EXPECT_LT(kept.size(), all.size());
  for (const Folded& f : kept) EXPECT_GE(f.ns, largest);
}

TEST(CollapseOptions, KernelOnlyAndUserOnly) {
  const Recording& r = recording("wl_condvar");
  const Truth& t = r.truth;
  auto kernel = perf_script(r, "offwake-collapse.py", "--kernel-only");
  ASSERT_EQ(kernel.status, 0) << kernel.err;
  auto user = perf_script(r, "offwake-collapse.py", "--user-only");
  ASSERT_EQ(user.status, 0) << user.err;
  uint64_t kernel_ns = 0;
  for (const Folded& f : parse_folded(kernel.out)) {
    EXPECT_FALSE(contains(f.target, t.function) || contains(f.target, "main")) << "user frame kept";
    EXPECT_FALSE(contains(f.waker, t.waker_function)) << "user frame kept";
    if (contains(f.target, "futex_wait")) kernel_ns += f.ns;
  }
  EXPECT_GT(kernel_ns, 0u) << kernel.out;
  for (const Folded& f : parse_folded(user.out)) {
    EXPECT_FALSE(contains(f.target, "schedule") || contains(f.target, "__schedule")) << "kernel frame kept";
    EXPECT_FALSE(contains(f.waker, "try_to_wake_up")) << "kernel frame kept";
  }
  // Fewer frames fold more stacks together, but the time stays the same.
  size_t lines = 0;
  expect_within_5_percent(truth_ns(parse_folded(user.out), t, &lines), t.blocked_ns);
  EXPECT_EQ(lines, 1u) << user.out;
}

TEST(TopOptions, NLimitsRankedRows) {
  const Recording& r = recording("wl_condvar");
  auto res = perf_script(r, "offwake-top.py", "-n 1 --wakers 1");
  ASSERT_EQ(res.status, 0) << res.err;
  auto lines = lines_of(res.out);
  // Header, one stack, its one waker, the total.
  ASSERT_EQ(lines.size(), 4u) << res.out;
  EXPECT_EQ(lines[1].find_first_not_of(' '), lines[1].find('1'));
  EXPECT_NE(lines[2].find("woken by"), std::string::npos);
  EXPECT_EQ(lines[3].rfind("total blocked", 0), 0u);
  // Columns line up: TIME ends in the same column in every row.
  auto end_of_time = [](const std::string& l) { return l.find("  ", l.find_first_not_of(" #0123456789")); };
  EXPECT_EQ(end_of_time(lines[1]), end_of_time(lines[2]));
}

TEST(FlamegraphFolded, PlainPythonFromCollapseOutputMatchesPerfScript) {
  const Recording& r = recording("wl_pipe");
  TempDir dir;
  auto folded = perf_script(r, "offwake-collapse.py");
  ASSERT_EQ(folded.status, 0);
  auto piped = run("python3 " + kScripts + "offwake-flamegraph.py --folded - -o " + dir.file("a.svg"), folded.out);
  ASSERT_EQ(piped.status, 0) << piped.err;
  auto direct = perf_script(r, "offwake-flamegraph.py", "-o " + dir.file("b.svg"));
  ASSERT_EQ(direct.status, 0) << direct.err;
  EXPECT_EQ(read_file(dir.file("a.svg")), read_file(dir.file("b.svg")));
  EXPECT_EQ(svg_titles(dir.file("a.svg")).status, 0);
}

// A bad argument: exit status 2 and one line on stderr that names the script.
void expect_usage_error(const RunResult& res, const std::string& script) {
  EXPECT_EQ(res.status, 2) << res.out << res.err;
  EXPECT_EQ(std::count(res.err.begin(), res.err.end(), '\n'), 1) << res.err;
  EXPECT_EQ(res.err.rfind(script + ": ", 0), 0u) << res.err;
  EXPECT_EQ(res.out, "");
}

TEST(BadArguments, ExitTwoWithOneLine) {
  const Recording& r = recording("wl_sleep");
  expect_usage_error(perf_script(r, "offwake-collapse.py", "--bogus"), "offwake-collapse");
  expect_usage_error(perf_script(r, "offwake-collapse.py", "--min lots"), "offwake-collapse");
  expect_usage_error(perf_script(r, "offwake-collapse.py", "--kernel-only --user-only"), "offwake-collapse");
  expect_usage_error(perf_script(r, "offwake-top.py", "-n 0"), "offwake-top");
  expect_usage_error(perf_script(r, "offwake-top.py", "stray"), "offwake-top");
  expect_usage_error(perf_script(r, "offwake-flamegraph.py", "--width x"), "offwake-flamegraph");
  // Outside perf, the flame graph needs folded input.
  expect_usage_error(run("python3 " + kScripts + "offwake-flamegraph.py -o /dev/null"), "offwake-flamegraph");
}

}  // namespace
}  // namespace offwake::test
