// End to end, as root: cgroups and PID namespaces in a recording, as the containers people
// profile have them. wl_pipe runs in a cgroup v2 directory of the test's own (the waker, the
// parent) and its child moves itself into a second one, named like a container, made while
// the machine is recorded and removed before the recording ends (so only the kernel's
// PERF_RECORD_CGROUP names it). Then Debian's perf 6.1 (perf report --sort cgroup), perf 6.12
// (perf script -F cgroup) and our report (--sort cgroup, --cgroup, pprof labels) must put the
// child's blocked time, as the workload measured it, in the child's cgroup, and show that its
// waker was in the other one: recorded by either back end, or converted from perf's own
// recording. With --namespaces, under unshare --pid, the samples carry host
// pids and perf's namespace records give the process its own pid namespace.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "support/go_pprof.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/report_table.h"
#include "support/run.h"
#include "support/test_cgroup.h"
#include "support/tolerances.h"
#include "support/truth.h"

namespace offwake::test {
namespace {

// A row of `perf report --no-children --sort cgroup -n --show-total-period`, per event.
struct PerfCgroupRow {
  uint64_t samples = 0, period = 0;
};
using PerfCgroupTable = std::map<std::string, std::map<std::string, PerfCgroupRow>>;  // event -> cgroup -> row

PerfCgroupTable parse_perf_report(const std::string& text) {
  PerfCgroupTable out;
  std::string event;
  std::istringstream in(text);
  static const std::regex kEvent(R"(^# Samples: .* of event '([^']+)')");
  static const std::regex kRow(R"(^\s+[0-9.]+%\s+([0-9]+)\s+([0-9]+)\s+(\S+)\s*$)");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, kEvent)) event = m[1];
    else if (std::regex_match(line, m, kRow)) out[event][m[3]] = {std::stoull(m[1]), std::stoull(m[2])};
  }
  return out;
}

// A line of `perf script -F comm,tid,cgroup,period,event` (perf 6.12: 6.1 has no cgroup field).
struct CgroupLine {
  std::string comm, cgroup, event;
  uint32_t tid = 0;
  uint64_t period = 0;
};
std::vector<CgroupLine> parse_cgroup_script(const std::string& text) {
  std::vector<CgroupLine> out;
  std::istringstream in(text);
  // "         wl_pipe   10108   37496311  offwake-time:  /offwake-manual-2136"
  static const std::regex kLine(R"(^\s*(.+?)\s+([0-9]+)\s+([0-9]+)\s+(\S+):\s+(\S+)\s*$)");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, m, kLine))
      out.push_back({m[1], m[5], m[4], static_cast<uint32_t>(std::stoul(m[2])), std::stoull(m[3])});
  return out;
}

// Our report --sort cgroup: each group's header "# cgroup PATH: 403.46 ms, 1.20%, 20 blocks",
// and the rows under it with their count and the blocked stack's line.
struct ReportGroup {
  double ns = 0;
  uint64_t blocks = 0;
  struct Row {
    double ns = 0;
    uint64_t count = 0;
    std::string text;
  };
  std::vector<Row> rows;
  std::vector<std::string> wakers;  // "woken by ..." lines
};
std::map<std::string, ReportGroup> parse_report_groups(const std::string& text) {
  std::map<std::string, ReportGroup> out;
  ReportGroup* g = nullptr;
  std::istringstream in(text);
  static const std::regex kHeader(R"(^# cgroup (\S+): ([0-9.]+) (ns|us|ms|s), [0-9.]+%, ([0-9]+) blocks$)");
  static const std::regex kRow(R"(^\s+([0-9.]+) (ns|us|ms|s)\s+[0-9.]+%\s+([0-9]+)\s+\S+ \S+\s+\S+ \S+\s+(.*)$)");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_match(line, m, kHeader)) {
      g = &out[m[1]];
      g->ns = parse_human_ns(m[2], m[3]);
      g->blocks = std::stoull(m[4]);
    } else if (g && line.find("woken by ") != std::string::npos) {
      g->wakers.push_back(line.substr(line.find("woken by ")));
    } else if (g && std::regex_match(line, m, kRow)) {
      g->rows.push_back({parse_human_ns(m[1], m[2]), std::stoull(m[3]), m[4]});
    }
  }
  return out;
}

// "# off-CPU: 808.26 ms in 41 blocks, ..." of our report.
double report_total_ns(const std::string& text) {
  static const std::regex kTotal(R"(# off-CPU: ([0-9.]+) (ns|us|ms|s) in ([0-9]+) blocks)");
  std::smatch m;
  return std::regex_search(text, m, kTotal) ? parse_human_ns(m[1], m[2]) : -1;
}

void expect_near_truth(double recorded_ns, uint64_t truth_ns, const std::string& what) {
  EXPECT_NEAR(recorded_ns, static_cast<double>(truth_ns), kBlockedTimeTolerance * static_cast<double>(truth_ns))
      << what;
}

// The recording of the test: the waker's cgroup made by the test before the recording, the
// blocked child's made by the workload's shell once recording, and removed by it when
// wl_pipe is done, before the recording ends.
struct CgroupRun {
  TempDir dir;
  TestCgroup waker{"waker"};
  TestCgroup blocked{"docker-" + container_like_id(static_cast<unsigned>(getpid())) + ".scope", false};
  std::string data = dir.file("perf.data");
  RunResult record;
  Truth truth;
};

// `recorder` records the machine into r.data (perf offwake record -a, or perf record);
// `launcher` runs the workload's shell (taskset).
void record_in_cgroups(CgroupRun& r, const std::string& recorder, const std::string& launcher = "") {
  ASSERT_EQ(r.waker.error(), "");
  const std::string shell = "echo $$ > " + r.waker.procs() + " && mkdir " + r.blocked.dir() + " && " + kWorkloads +
                            "wl_pipe -n 20 -m 20 -g " + r.blocked.procs() + " && rmdir " + r.blocked.dir();
  r.record = run(recorder + " -- " + launcher + " sh -c '" + shell + "'");
  ASSERT_EQ(r.record.status, 0) << r.record.err;
  const std::vector<Truth> truth = parse_truth(r.record.out);
  ASSERT_EQ(truth.size(), 1u) << r.record.out;
  r.truth = truth[0];
  struct stat st{};
  EXPECT_NE(stat(r.blocked.dir().c_str(), &st), 0) << "the workload did not remove " << r.blocked.dir();
  EXPECT_EQ(summary_count(r.record.err, " cgroups of samples not named"), 0u) << r.record.err;
}

// What every reader must say of the recording.
void expect_cgroups_read(const CgroupRun& r) {
  const Truth& t = r.truth;
  const std::string& blocked = r.blocked.path();
  const std::string& waker = r.waker.path();

  // Debian's perf 6.1: the child's time in its cgroup; the parent, its waker, in the other.
  auto report = run(std::string(kDebianPerf) + " report -i " + r.data +
                    " --no-children --sort cgroup --stdio -g none -n --show-total-period --percent-limit 0");
  ASSERT_EQ(report.status, 0) << report.err;
  const PerfCgroupTable table = parse_perf_report(report.out);
  ASSERT_TRUE(table.count("offwake-time") && table.at("offwake-time").count(blocked)) << report.out;
  expect_near_truth(static_cast<double>(table.at("offwake-time").at(blocked).period), t.blocked_ns,
                    "perf report --sort cgroup: " + blocked + "\n" + report.out);
  ASSERT_TRUE(table.count("offwake-waker")) << report.out;
  EXPECT_TRUE(table.at("offwake-waker").count(waker)) << report.out;
  EXPECT_FALSE(table.at("offwake-time").count("unknown")) << report.out;

  // perf 6.12's perf script -F cgroup: each sample of the child's blocks names its cgroup (or,
  // a block while it moved there, the parent's), and the waker sample after it the parent's.
  auto script = run(perf612_path() + " script -i " + r.data + " -F comm,tid,cgroup,period,event");
  ASSERT_EQ(script.status, 0) << script.err;
  const std::vector<CgroupLine> lines = parse_cgroup_script(script.out);
  uint64_t child_ns = 0, woken_by_parent = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].event != "offwake-time" || lines[i].tid != t.tid) continue;
    if (lines[i].cgroup != blocked) {
      EXPECT_EQ(lines[i].cgroup, waker) << "perf 6.12 script, tid " << t.tid;
      continue;
    }
    child_ns += lines[i].period;
    if (i + 1 < lines.size() && lines[i + 1].event == "offwake-waker" && lines[i + 1].tid == t.waker_tid) {
      EXPECT_EQ(lines[i + 1].cgroup, waker);
      ++woken_by_parent;
    }
  }
  expect_near_truth(static_cast<double>(child_ns), t.blocked_ns, "perf 6.12 script -F cgroup\n" + script.out.substr(0, 3000));
  EXPECT_GT(woken_by_parent, 0u) << script.out.substr(0, 3000);

  // Ours, grouped by cgroup: the child's stack with the truth's count, its waker from the
  // other cgroup said so.
  auto ours = run(kOffwake + " report -i " + r.data + " --sort cgroup");
  ASSERT_EQ(ours.status, 0) << ours.err;
  const auto groups = parse_report_groups(ours.out);
  ASSERT_TRUE(groups.count(blocked)) << ours.out.substr(0, 5000);
  const ReportGroup& g = groups.at(blocked);
  expect_near_truth(g.ns, t.blocked_ns, "report --sort cgroup\n" + ours.out.substr(0, 5000));
  uint64_t count = 0;
  double ns = 0;
  for (const auto& row : g.rows) {
    if (row.text.find(t.function) == std::string::npos) continue;
    count += row.count;
    ns += row.ns;
  }
  EXPECT_EQ(count, t.count) << ours.out.substr(0, 5000);
  expect_near_truth(ns, t.blocked_ns, "report --sort cgroup, " + t.function);
  const std::string woken = "/" + std::to_string(t.waker_tid) + " (cgroup " + waker + "): ";
  EXPECT_TRUE(std::any_of(g.wakers.begin(), g.wakers.end(),
                          [&](const std::string& w) { return w.find(woken) != std::string::npos; }))
      << "no waker line with '" << woken << "'\n" << ours.out.substr(0, 5000);

  // --cgroup keeps that cgroup and nothing else: the same time as its group, none of the
  // parent's (which never entered it).
  auto only = run(kOffwake + " report -i " + r.data + " --cgroup " + blocked);
  ASSERT_EQ(only.status, 0) << only.err;
  EXPECT_NEAR(report_total_ns(only.out), g.ns, 0.01 * g.ns + 10'000) << only.out.substr(0, 3000);
  auto parent = run(kOffwake + " report -i " + r.data + " --cgroup " + blocked + " --tid " + std::to_string(t.waker_tid));
  ASSERT_EQ(parent.status, 0) << parent.err;
  EXPECT_EQ(report_total_ns(parent.out), 0) << parent.out;
  auto parent_in_its = run(kOffwake + " report -i " + r.data + " --cgroup " + waker + " --tid " + std::to_string(t.waker_tid));
  EXPECT_GT(report_total_ns(parent_in_its.out), 0) << parent_in_its.out;
}

// The pprof labels of the child's samples, read by go tool pprof: its cgroup, the container id
// its name holds, and the waker's cgroup.
void expect_pprof_labels(const CgroupRun& r, const std::string& container) {
  const std::string profile = r.dir.file("cgroup.pb.gz");
  auto written = run(kOffwake + " report -i " + r.data + " --tid " + std::to_string(r.truth.tid) + " --cgroup " +
                     r.blocked.path() + " --pprof " + profile);
  ASSERT_EQ(written.status, 0) << written.err;
  auto raw = go_pprof("-raw " + profile);
  ASSERT_EQ(raw.status, 0) << raw.err;
  std::string error;
  const PprofRaw p = parse_pprof_raw(raw.out, &error);
  ASSERT_EQ(error, "");
  int64_t ns = 0;
  size_t woken_by_parent = 0;
  for (const PprofRawSample& s : p.samples) {
    EXPECT_EQ(s.label("cgroup"), r.blocked.path());
    EXPECT_EQ(s.label("container"), container);
    if (s.label("waker_tid") == std::to_string(r.truth.waker_tid)) {
      EXPECT_EQ(s.label("waker_cgroup"), r.waker.path());
      EXPECT_EQ(s.label("waker_container"), "");  // "waker" holds no id
      ++woken_by_parent;
    }
    if (s.has_function(r.truth.function)) ns += s.values.at(0);
  }
  EXPECT_GT(woken_by_parent, 0u) << raw.out.substr(0, 3000);
  expect_near_truth(static_cast<double>(ns), r.truth.blocked_ns, "pprof\n" + raw.out.substr(0, 3000));
}

std::string offwake_record(const CgroupRun& r, const std::string& options = "") {
  return kOffwake + " record -a " + options + " -o " + r.data;
}

// perf offwake script's dicts: the child's offwake-time samples in its cgroup, with the
// container id, and those its parent woke with the parent's cgroup in 'waker'.
void expect_script_dicts(const CgroupRun& r, const std::string& container) {
  const std::string printer = r.dir.file("cgroups.py");
  std::ofstream(printer) << "def process_event(d):\n"
                            "    if d['ev_name'] != 'offwake-time' or d['sample']['tid'] != " << r.truth.tid << ":\n"
                            "        return\n"
                            "    w = d.get('waker', {})\n"
                            "    print(d['sample']['period'], d['cgroup_id'] != 0, d['cgroup'], d.get('container', '-'),\n"
                            "          w.get('tid'), w.get('cgroup'), w.get('container', '-'))\n";
  auto out = run(kOffwake + " script -i " + r.data + " -s " + printer);
  ASSERT_EQ(out.status, 0) << out.err;
  std::istringstream lines(out.out);
  uint64_t ns = 0, woken_by_parent = 0;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    uint64_t period = 0;
    std::string has_id, cgroup, cont, waker_tid, waker_cgroup, waker_cont;
    f >> period >> has_id >> cgroup >> cont >> waker_tid >> waker_cgroup >> waker_cont;
    EXPECT_EQ(has_id, "True") << line;
    if (cgroup != r.blocked.path()) continue;  // a block while it moved there
    EXPECT_EQ(cont, container) << line;
    ns += period;
    if (waker_tid == std::to_string(r.truth.waker_tid)) {
      EXPECT_EQ(waker_cgroup, r.waker.path()) << line;
      EXPECT_EQ(waker_cont, "-") << line;
      ++woken_by_parent;
    }
  }
  EXPECT_GT(woken_by_parent, 0u) << out.out;
  expect_near_truth(static_cast<double>(ns), r.truth.blocked_ns, "perf offwake script\n" + out.out);
}

TEST(Cgroups, BpfSamplesNameTheBlockedAndTheWakersCgroups) {
  CgroupRun r;
  record_in_cgroups(r, offwake_record(r));
  expect_cgroups_read(r);
  const std::string container = container_like_id(static_cast<unsigned>(getpid()));
  expect_pprof_labels(r, container);
  expect_script_dicts(r, container);
}

TEST(Cgroups, TracepointSamplesNameTheBlockedAndTheWakersCgroups) {
  CgroupRun r;
  // On CPU 0, as the other tracepoint tests: the tracepoints miss wakeups on an idle CPU 1.
  record_in_cgroups(r, offwake_record(r, "--backend tracepoint"), "taskset -c 0");
  expect_cgroups_read(r);
}

// perf offwake convert of Debian perf's own recording with --all-cgroups: the cgroups of its
// tracepoint samples become the blocks' and the wakers', its PERF_RECORD_CGROUP records are
// carried over.
TEST(Cgroups, ConvertKeepsAStockRecordingsCgroups) {
  CgroupRun r;
  const std::string stock = r.dir.file("stock.data");
  record_in_cgroups(r,
                    std::string(kDebianPerf) + " record -q --all-cgroups -e sched:sched_switch -e sched:sched_waking -g -a -o " + stock,
                    "taskset -c 0");
  auto convert = run(kOffwake + " convert -i " + stock + " -o " + r.data);
  ASSERT_EQ(convert.status, 0) << convert.err;
  expect_cgroups_read(r);
}

// --namespaces under unshare --pid --fork: the process is pid 1 in its own pid namespace. The
// samples name it by its host pid (as perf's own do), and perf's namespace records (its kernel
// records for the processes made while recording) give it the pid namespace the workload's
// shell saw, not the host's.
TEST(Namespaces, RecordsGiveAContainersPidNamespace) {
  TempDir dir;
  const std::string data = dir.file("perf.data");
  // Inside, /proc is still the host's: the shell's /proc/self/status (read by the shell itself,
  // which then becomes wl_pipe's parent) says its host pid and its pid in the namespace
  // ("NSpid: 12345 1"), and /proc/self/ns/pid the namespace ("pid:[4026532512]").
  const std::string shell =
      "while read -r k v; do case $k in NSpid:) echo NSpid: $v;; esac; done < /proc/self/status; "
      "readlink /proc/self/ns/pid && exec " + kWorkloads + "wl_pipe -n 10 -m 20";
  auto rec = run(kOffwake + " record -a --namespaces -o " + data + " -- unshare --pid --fork sh -c '" + shell + "'");
  ASSERT_EQ(rec.status, 0) << rec.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(rec.out, m, std::regex(R"(NSpid: ([0-9]+) 1\n)"))) << rec.out;
  const uint32_t host_pid = static_cast<uint32_t>(std::stoul(m[1]));
  ASSERT_TRUE(std::regex_search(rec.out, m, std::regex(R"(pid:\[([0-9]+)\])"))) << rec.out;
  const uint64_t ns_inode = std::stoull(m[1]);
  struct stat host_ns{};
  ASSERT_EQ(stat("/proc/self/ns/pid", &host_ns), 0);
  ASSERT_NE(ns_inode, host_ns.st_ino);
  const std::vector<Truth> truth = parse_truth(rec.out);
  ASSERT_EQ(truth.size(), 1u) << rec.out;
  EXPECT_EQ(truth[0].waker_tid, 1u);  // the parent, as the namespace numbers it

  // The samples: host pids. The child's blocks are woken by the parent, whose host pid is not 1.
  auto script = run(std::string(kDebianPerf) + " script -i " + data + " " + kPerfScriptFields);
  ASSERT_EQ(script.status, 0) << script.err;
  const std::vector<ScriptSample> samples = parse_perf_script(script.out);
  uint64_t child_blocks = 0;
  uint32_t child = 0;
  for (size_t i = 0; i + 1 < samples.size(); ++i) {
    if (samples[i].event != "offwake-time" || samples[i].comm != "wl_pipe" || !samples[i].has_frame(truth[0].function))
      continue;
    child = samples[i].tid;
    EXPECT_NE(samples[i].tid, truth[0].tid);  // not the namespace's 2
    if (samples[i + 1].event == "offwake-waker" && samples[i + 1].comm == "wl_pipe") {
      EXPECT_EQ(samples[i + 1].tid, host_pid);
      ++child_blocks;
    }
  }
  ASSERT_GT(child_blocks, 0u) << script.out.substr(0, 3000);

  // perf's namespace records of the parent and the child: the workload's pid namespace.
  auto events = run(std::string(kDebianPerf) + " script -i " + data + " --show-namespace-events");
  ASSERT_EQ(events.status, 0) << events.err;
  char pid_entry[64];
  snprintf(pid_entry, sizeof pid_entry, "3/pid: %llu/%#llx", (unsigned long long)host_ns.st_dev,
           (unsigned long long)ns_inode);
  for (uint32_t pid : {host_pid, child}) {
    const std::string head = "PERF_RECORD_NAMESPACES " + std::to_string(pid) + "/" + std::to_string(pid) + " ";
    const size_t at = events.out.find(head);
    ASSERT_NE(at, std::string::npos) << head << "\n" << events.out.substr(0, 3000);
    EXPECT_NE(events.out.substr(at, 300).find(pid_entry), std::string::npos)
        << pid_entry << "\n" << events.out.substr(at, 300);
  }
  // The host's own processes, described at the start, are in the host's pid namespace.
  char host_entry[64];
  snprintf(host_entry, sizeof host_entry, "3/pid: %llu/%#llx", (unsigned long long)host_ns.st_dev,
           (unsigned long long)host_ns.st_ino);
  EXPECT_NE(events.out.find(host_entry), std::string::npos) << events.out.substr(0, 3000);

  // Without --namespaces, none.
  const std::string plain = dir.file("plain.data");
  ASSERT_EQ(run(kOffwake + " record -a -o " + plain + " -- true").status, 0);
  auto none = run(std::string(kDebianPerf) + " script -i " + plain + " --show-namespace-events");
  EXPECT_EQ(none.out.find("PERF_RECORD_NAMESPACES"), std::string::npos);
}

}  // namespace
}  // namespace offwake::test
