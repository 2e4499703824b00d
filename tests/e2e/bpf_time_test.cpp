// End to end, as root: what the BPF programs cost, as the recording tells it (--bpf-stats, or
// kernel.bpf_stats_enabled): the summary's line, the counters in the file, perf offwake
// report's line, and with --switch-output each window's share. The counts are held against the
// workload's truth: each of its blocks is a switch out and a switch back in, and a wakeup.
// Tests run one at a time (ctest -j 1), so that the sysctl set here reaches no other test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "perfdata/reader.h"
#include "samples/record_stats.h"
#include "support/go_pprof.h"
#include "support/paths.h"
#include "support/run.h"
#include "support/tolerances.h"
#include "support/truth.h"
#include "support/usage_error.h"
#include "support/window_files.h"

namespace offwake::test {
namespace {

constexpr const char* kSysctl = "/proc/sys/kernel/bpf_stats_enabled";

// kernel.bpf_stats_enabled set for a test, and put back as it was.
class ScopedBpfStatsSysctl {
 public:
  explicit ScopedBpfStatsSysctl(bool on) {
    std::ifstream(kSysctl) >> was_;
    write(on ? 1 : 0);
  }
  ~ScopedBpfStatsSysctl() { write(was_); }
  ScopedBpfStatsSysctl(const ScopedBpfStatsSysctl&) = delete;
  ScopedBpfStatsSysctl& operator=(const ScopedBpfStatsSysctl&) = delete;

 private:
  static void write(int v) {
    std::ofstream out(kSysctl);
    out << v << "\n";
    EXPECT_TRUE(out.flush()) << "writing " << kSysctl;
  }
  int was_ = 0;
};

// The counters perf offwake record stored in `file`.
std::map<std::string, uint64_t> file_counters(const std::string& file) {
  std::map<std::string, uint64_t> out;
  auto r = perfdata::PerfDataReader::open(file);
  EXPECT_TRUE(r) << file << ": " << (r ? "" : r.error().message());
  if (!r) return out;
  auto it = r->info().other_sections.find(kFeatOffwakeStats);
  EXPECT_NE(it, r->info().other_sections.end()) << file << ": no offwake counters";
  if (it == r->info().other_sections.end()) return out;
  auto fields = decode_record_stats(it->second);
  EXPECT_TRUE(fields) << file;
  if (fields)
    for (const auto& [k, v] : *fields) out[k] = v;
  return out;
}

// The summary's "BPF programs:" line: each program's runs and ns a run, by name; empty if the
// line is not there.
struct ProgramLine {
  uint64_t runs = 0;
  double ns_a_run = 0;
};
std::map<std::string, ProgramLine> summary_programs(const std::string& err) {
  std::map<std::string, ProgramLine> out;
  std::smatch line;
  static const std::regex kLine(
      R"(\[ perf offwake record: BPF programs: [0-9.]+ s of CPU, [0-9.]+% of one CPU over [0-9.]+ s: (.*) \])");
  if (!std::regex_search(err, line, kLine)) return out;
  static const std::regex kProgram(R"((\w+) (\d+) runs? at (\d+) ns)");
  const std::string list = line[1];
  for (std::sregex_iterator it(list.begin(), list.end(), kProgram), end; it != end; ++it)
    out[(*it)[1]] = {std::stoull((*it)[2]), std::stod((*it)[3])};
  return out;
}

// The runs a truth's blocks make at the least: each block is a switch out and a switch in
// (two sched_switch events), and a wakeup, but for the wakeups the kernel may not trace
// (max_missed_blocks).
void expect_runs_cover_truth(uint64_t switches, uint64_t wakings, const Truth& t, const std::string& what) {
  EXPECT_GE(switches, 2 * t.count) << what;
  EXPECT_GE(wakings, t.count - max_missed_blocks(t.count)) << what;
}

// perf offwake report --stdio on `file`: its "# BPF programs:" line is there, or not.
void expect_report_line(const std::string& file, bool there) {
  auto report = run(kOffwake + " report --stdio -i " + file);
  EXPECT_EQ(report.status, 0) << report.err;
  static const std::regex kLine(
      R"(\n# BPF programs: [0-9.]+ s of CPU in \d+ runs, [0-9.]+% of one CPU over [0-9.]+ s recorded\n)");
  EXPECT_EQ(std::regex_search(report.out, kLine), there) << report.out;
}

// `perf offwake record OPTIONS -o FILE -- wl_pipe` with 100 messages, and its one truth line.
struct Recorded {
  RunResult rec;
  Truth truth;
};
Recorded record_pipe(const TempDir& dir, const std::string& options) {
  Recorded r;
  r.rec = run(kOffwake + " record " + options + " -o " + dir.file("perf.data") + " -- " + kWorkloads +
              "wl_pipe -n 100 -m 2");
  EXPECT_EQ(r.rec.status, 0) << r.rec.err;
  auto truth = parse_truth(r.rec.out);
  EXPECT_EQ(truth.size(), 1u) << r.rec.out;
  if (truth.size() == 1) r.truth = truth[0];
  // A read finds its byte already there now and then: most of the 100 block.
  EXPECT_GE(r.truth.count, 50u) << r.rec.out;
  return r;
}

// --bpf-stats measures with the sysctl off: printed, stored, and shown by perf offwake
// report; the file is still one that Debian's perf reads.
TEST(BpfTime, BpfStatsMeasuresThePrograms) {
  ScopedBpfStatsSysctl off(false);
  TempDir dir;
  Recorded r = record_pipe(dir, "--bpf-stats");
  auto printed = summary_programs(r.rec.err);
  ASSERT_TRUE(printed.count("offwake_switch") && printed.count("offwake_waking")) << r.rec.err;
  expect_runs_cover_truth(printed["offwake_switch"].runs, printed["offwake_waking"].runs, r.truth, "summary");
  for (const auto& [name, p] : printed) {
    // A run with statistics on costs at least its two clock reads; none costs a millisecond.
    EXPECT_GT(p.ns_a_run, 10) << name;
    EXPECT_LT(p.ns_a_run, 1e6) << name;
  }

  auto c = file_counters(dir.file("perf.data"));
  EXPECT_EQ(c["bpf_time_measured"], 1u);
  EXPECT_EQ(c["bpf_prog_runs.offwake_switch"], printed["offwake_switch"].runs);
  EXPECT_EQ(c["bpf_prog_runs.offwake_waking"], printed["offwake_waking"].runs);
  uint64_t runs = 0, ns = 0;
  for (const auto& [k, v] : c) {
    if (k.rfind("bpf_prog_runs.", 0) == 0) runs += v;
    if (k.rfind("bpf_prog_run_ns.", 0) == 0) ns += v;
  }
  EXPECT_EQ(c["bpf_prog_runs"], runs);
  EXPECT_EQ(c["bpf_prog_run_ns"], ns);
  EXPECT_GT(ns, 0u);

  expect_report_line(dir.file("perf.data"), true);
  // go tool pprof shows it among the profile's comments: a back end that keeps each window's
  // profile keeps what the window cost.
  auto pprof = run(kOffwake + " report --pprof " + dir.file("out.pb.gz") + " -i " + dir.file("perf.data"));
  EXPECT_EQ(pprof.status, 0) << pprof.err;
  std::string error;
  PprofRaw raw = parse_pprof_raw(go_pprof("-raw " + dir.file("out.pb.gz")).out, &error);
  EXPECT_EQ(error, "");
  EXPECT_TRUE(std::any_of(raw.comments.begin(), raw.comments.end(),
                          [](const std::string& c) { return c.rfind("BPF programs: ", 0) == 0; }))
      << testing::PrintToString(raw.comments);
  auto perf = run("perf report --stdio --sort comm -i " + dir.file("perf.data"));
  EXPECT_EQ(perf.status, 0) << perf.err;
  EXPECT_NE(perf.out.find("wl_pipe"), std::string::npos) << perf.out;
}

// Without --bpf-stats and with the sysctl off, the kernel counts nothing: no line, and zeros
// marked as not measured in the file (not a cost of zero).
TEST(BpfTime, NotMeasuredWithoutStatistics) {
  ScopedBpfStatsSysctl off(false);
  TempDir dir;
  Recorded r = record_pipe(dir, "");
  EXPECT_EQ(r.rec.err.find("BPF programs:"), std::string::npos) << r.rec.err;
  auto c = file_counters(dir.file("perf.data"));
  EXPECT_EQ(c.count("bpf_time_measured"), 1u);
  EXPECT_EQ(c["bpf_time_measured"], 0u);
  EXPECT_EQ(c["bpf_prog_runs"], 0u);
  EXPECT_EQ(c.count("bpf_prog_runs.offwake_switch"), 0u);
  expect_report_line(dir.file("perf.data"), false);
}

// The sysctl on is as good as --bpf-stats.
TEST(BpfTime, TheSysctlMeasuresToo) {
  ScopedBpfStatsSysctl on(true);
  TempDir dir;
  Recorded r = record_pipe(dir, "");
  auto printed = summary_programs(r.rec.err);
  expect_runs_cover_truth(printed["offwake_switch"].runs, printed["offwake_waking"].runs, r.truth, r.rec.err);
  EXPECT_EQ(file_counters(dir.file("perf.data"))["bpf_time_measured"], 1u);
}

// With --switch-output each window's file holds its own share: the windows' runs add up to the
// whole recording's, which the last summary prints, and each window's cover its own blocks.
TEST(BpfTime, WindowsAddUpToTheRecording) {
  ScopedBpfStatsSysctl off(false);
  TempDir dir;
  auto rec = run(kOffwake + " record --bpf-stats --switch-output=1s -o " + dir.file("perf.data") + " -- " +
                 kWorkloads + "wl_pipe -n 150 -m 20");
  ASSERT_EQ(rec.status, 0) << rec.err;
  auto truth = parse_truth(rec.out);
  ASSERT_EQ(truth.size(), 1u) << rec.out;
  const std::vector<std::string> files = window_files(dir);
  ASSERT_GE(files.size(), 2u) << rec.err;
  uint64_t switches = 0, wakings = 0, blocks = 0;
  for (const auto& f : files) {
    auto c = file_counters(f);
    EXPECT_EQ(c["bpf_time_measured"], 1u) << f;
    EXPECT_GT(c["bpf_prog_runs.offwake_switch"], 0u) << f;
    switches += c["bpf_prog_runs.offwake_switch"];
    wakings += c["bpf_prog_runs.offwake_waking"];
    blocks += c["blocks"];
  }
  auto printed = summary_programs(rec.err);
  EXPECT_EQ(switches, printed["offwake_switch"].runs) << rec.err;
  EXPECT_EQ(wakings, printed["offwake_waking"].runs) << rec.err;
  expect_runs_cover_truth(switches, wakings, truth[0], rec.err);
  EXPECT_GE(blocks, truth[0].count - max_missed_blocks(truth[0].count));
}

// The statistics need CAP_SYS_ADMIN: without it, --bpf-stats is one line and exit status 1,
// with no recording made (the user asked for a measure that cannot be had), not a fall back
// to the tracepoint back end, where the option is a usage error.
TEST(BpfTime, WithoutThePrivilegeItIsOneLine) {
  TempDir dir;
  auto r = run("setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin " + kOffwake + " record --bpf-stats -o " +
               dir.file("perf.data") + " -- true");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_EQ(r.err.rfind("perf offwake record: turning on the kernel's BPF run-time statistics for --bpf-stats", 0), 0u)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("perf.data")));
  expect_usage_error(run(kOffwake + " record --bpf-stats --backend tracepoint -o " + dir.file("x.data") + " -- true"),
                     "--bpf-stats needs the BPF back end", "record");
}

}  // namespace
}  // namespace offwake::test
