// End to end, as root: the sample filters of perf offwake script and report (--comm, --pid,
// --tid, -C/--cpu, --time: commands/sample_options.h, report/sample_filter.h) against the
// workloads' truth and against Debian's perf script and perf report with the same options on
// the same file; their refusals; and perf offwake script -g python's skeleton.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "support/paths.h"
#include "support/recording.h"
#include "support/run.h"
#include "support/test_cgroup.h"
#include "support/tolerances.h"
#include "support/truth.h"

namespace offwake::test {
namespace {

// One sample as both hosts show it: what perf script -F event,tid,cpu,time,period --ns prints.
struct Sample {
  std::string event;
  uint32_t tid = 0, cpu = 0;
  uint64_t time_ns = 0, period = 0;
  std::string functions;  // ours only: the wl_* functions of its callchain, "-" for none
  auto key() const { return std::tie(event, tid, cpu, time_ns, period); }
  bool operator<(const Sample& o) const { return key() < o.key(); }
};

// A timeline recording (a sample per block) of wl_sleep and wl_condvar (support/recording.h),
// each pinned to its own cpu so that where a block ended is known: wl_sleep (woken by the
// timer) on cpu 0, wl_condvar (a waiter woken by its signaller thread) on cpu 1.
struct TimelineRecording : SleeperAndWaiter {
  TempDir dir;
  std::string data = dir.file("timeline.data"), aggregated = dir.file("aggregated.data");
  std::string printer = dir.file("print.py");
};

const TimelineRecording& recording() {
  static TimelineRecording r;
  static const bool made = [] {
    static_cast<SleeperAndWaiter&>(r) = record_sleeper_and_waiter(r.data, "--timeline", true);
    run(kOffwake + " record -q -o " + r.aggregated + " -- " + kWorkloads + "wl_sleep -n 5 -m 5");
    run("cat > " + r.printer + R"( <<'EOF'
def process_event(d):
    s = d['sample']
    names = [n['sym']['name'] for n in d.get('callchain', []) if 'sym' in n and n['sym']['name'].startswith('wl_')]
    print(d['ev_name'], s['tid'], s['cpu'], s['time'], s['period'], ','.join(names) or '-')
EOF)");
    return true;
  }();
  (void)made;
  r.expect_recorded();
  return r;
}

// What process_event() sees under perf offwake script with `args`, sorted.
std::vector<Sample> ours(const std::string& args) {
  const TimelineRecording& r = recording();
  auto run_it = run(kOffwake + " script -i " + r.data + " -s " + r.printer + " " + args);
  EXPECT_EQ(run_it.status, 0) << args << ": " << run_it.err;
  std::vector<Sample> out;
  std::istringstream in(run_it.out);
  for (Sample s; in >> s.event >> s.tid >> s.cpu >> s.time_ns >> s.period >> s.functions;) out.push_back(s);
  std::sort(out.begin(), out.end());
  return out;
}

// What Debian's perf script prints with `args`, sorted.
std::vector<Sample> perfs(const std::string& args) {
  auto run_it = run("perf script -i " + recording().data + " -F event,tid,cpu,time,period --ns " + args);
  EXPECT_EQ(run_it.status, 0) << args << ": " << run_it.err;
  std::vector<Sample> out;
  std::istringstream in(run_it.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    Sample s;
    std::string cpu, time;
    if (!(f >> s.tid >> cpu >> time >> s.period >> s.event)) continue;
    s.cpu = static_cast<uint32_t>(std::stoul(cpu.substr(1, cpu.size() - 2)));          // "[001]"
    const size_t dot = time.find('.');                                                  // "34628.494290010:"
    s.time_ns = std::stoull(time.substr(0, dot)) * 1000000000ull + std::stoull(time.substr(dot + 1, 9));
    s.event.pop_back();  // "offwake-time:"
    out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The same samples (by event, thread, cpu, time and period) with `args` under both hosts.
std::vector<Sample> as_perf_script(const std::string& args) {
  SCOPED_TRACE(args);
  std::vector<Sample> our = ours(args);
  const std::vector<Sample> perf = perfs(args);
  EXPECT_EQ(our.size(), perf.size());
  EXPECT_TRUE(std::equal(our.begin(), our.end(), perf.begin(), perf.end(),
                         [](const Sample& a, const Sample& b) { return a.key() == b.key(); }));
  return our;
}

// The blocks of the truth's function among `samples`: their count and time are the truth's.
void expect_truth(const std::vector<Sample>& samples, const Truth& t) {
  uint64_t count = 0, ns = 0;
  for (const Sample& s : samples) {
    if (s.event != "offwake-time" || s.tid != t.tid || s.functions.find(t.function) == std::string::npos) continue;
    ++count;
    ns += s.period;
  }
  EXPECT_LE(count, t.count) << t.function;
  EXPECT_GE(count + max_missed_blocks(t.count), t.count) << t.function;
  EXPECT_NEAR(static_cast<double>(ns), static_cast<double>(t.blocked_ns), kBlockedTimeTolerance * t.blocked_ns)
      << t.function;
}

bool has_function(const std::vector<Sample>& samples, const std::string& function) {
  return std::any_of(samples.begin(), samples.end(),
                     [&](const Sample& s) { return s.functions.find(function) != std::string::npos; });
}

template <typename Keep>
std::vector<Sample> subset(const std::vector<Sample>& all, Keep keep) {
  std::vector<Sample> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out), keep);
  return out;
}

bool same(const std::vector<Sample>& a, const std::vector<Sample>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Sample& x, const Sample& y) { return x.key() == y.key(); });
}

// The times the samples are stamped with, each once, in order.
std::vector<uint64_t> distinct_times(const std::vector<Sample>& samples) {
  std::vector<uint64_t> times;
  for (const Sample& s : samples) times.push_back(s.time_ns);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  return times;
}

std::string seconds(uint64_t ns) {
  char text[32];
  snprintf(text, sizeof text, "%llu.%09llu", static_cast<unsigned long long>(ns / 1000000000ull),
           static_cast<unsigned long long>(ns % 1000000000ull));
  return text;
}

TEST(ScriptFilters, CommPidAndTidKeepWhatPerfScriptShows) {
  const TimelineRecording& r = recording();
  ASSERT_GT(r.sleeper.count, 0u);
  const std::vector<Sample> all = as_perf_script("");
  ASSERT_FALSE(all.empty());

  const auto sleeps = as_perf_script("--comm wl_sleep");
  expect_truth(sleeps, r.sleeper);
  EXPECT_FALSE(has_function(sleeps, "wl_wait_for_signal"));
  // Its thread was the shell's (forked) and taskset's before the execs: those samples go by
  // those names, as in perf (a block of the forked shell before its exec: once in a rehearsal).
  EXPECT_TRUE(std::all_of(sleeps.begin(), sleeps.end(), [&](const Sample& s) { return s.tid == r.sleeper.tid; }));
  const auto tasksets = as_perf_script("--comm taskset");
  const auto shells = as_perf_script("--comm sh");
  auto of_sleeper = [&](const Sample& s) { return s.tid == r.sleeper.tid; };
  EXPECT_EQ(sleeps.size() + subset(tasksets, of_sleeper).size() + subset(shells, of_sleeper).size(),
            subset(all, of_sleeper).size());

  EXPECT_TRUE(same(as_perf_script("-c wl_sleep"), sleeps)) << "perf's name for --comm";
  EXPECT_TRUE(same(as_perf_script("--comms wl_sleep"), sleeps));

  const auto both = as_perf_script("--comm wl_sleep,wl_condvar");
  expect_truth(both, r.sleeper);
  expect_truth(both, r.waiter);
  EXPECT_LT(both.size(), all.size()) << "the shell's and the interrupts' samples are left out";

  // An offwake-waker sample goes by the waker's thread: the timer's wakeups of wl_sleep are
  // [hardirq]'s, selected alone.
  const auto interrupts = as_perf_script("--comm [hardirq]");
  ASSERT_FALSE(interrupts.empty());
  EXPECT_TRUE(std::all_of(interrupts.begin(), interrupts.end(), [](const Sample& s) { return s.event == "offwake-waker"; }));

  // wl_condvar's waiter is its main thread: its tid is the process's id.
  const auto process = as_perf_script("--pid " + std::to_string(r.waiter.tid));
  expect_truth(process, r.waiter);
  EXPECT_TRUE(std::all_of(process.begin(), process.end(), [&](const Sample& s) {
    return s.tid == r.waiter.tid || s.tid == r.waiter.waker_tid;
  }));
  const auto threads = as_perf_script("--tid " + std::to_string(r.sleeper.tid) + "," + std::to_string(r.waiter.waker_tid));
  expect_truth(threads, r.sleeper);
  EXPECT_TRUE(same(threads, subset(all, [&](const Sample& s) { return s.tid == r.sleeper.tid || s.tid == r.waiter.waker_tid; })));
}

TEST(ScriptFilters, CpuKeepsTheBlocksThatEndedThere) {
  const TimelineRecording& r = recording();
  const auto cpu1 = as_perf_script("-C 1");
  expect_truth(cpu1, r.waiter);
  EXPECT_FALSE(has_function(cpu1, "wl_sleep_for")) << "wl_sleep runs on cpu 0 only";
  const auto cpu0 = as_perf_script("--cpu 0");
  expect_truth(cpu0, r.sleeper);
  EXPECT_FALSE(has_function(cpu0, "wl_wait_for_signal")) << "wl_condvar runs on cpu 1 only";
  EXPECT_EQ(as_perf_script("--cpu 0-1").size(), cpu0.size() + cpu1.size());
}

// --time start,stop keeps the samples stamped within it, both ends included, as perf script's.
TEST(ScriptFilters, TimeKeepsTheBlocksWithinItEndsIncluded) {
  const std::vector<Sample> all = ours("");
  const std::vector<uint64_t> times = distinct_times(all);
  ASSERT_GE(times.size(), 30u);
  const uint64_t start = times[9], stop = times[times.size() - 10];
  const auto within = [&](uint64_t from, uint64_t to) {
    return subset(all, [&](const Sample& s) { return s.time_ns >= from && s.time_ns <= to; });
  };
  const auto kept = as_perf_script("--time " + seconds(start) + "," + seconds(stop));
  EXPECT_TRUE(same(kept, within(start, stop)));
  EXPECT_TRUE(has_function(kept, "wl_sleep_for"));
  EXPECT_LT(kept.size(), all.size());
  EXPECT_TRUE(same(as_perf_script("--time " + seconds(start) + ","), within(start, UINT64_MAX)));
  EXPECT_TRUE(same(as_perf_script("--time ," + seconds(stop)), within(0, stop)));
  // Microseconds, as perf script prints by default: the range's ends are whole microseconds.
  const uint64_t start_us = start / 1000 * 1000, stop_us = stop / 1000 * 1000;
  EXPECT_TRUE(same(as_perf_script("--time " + seconds(start_us).substr(0, seconds(start_us).size() - 3) + "," +
                                  seconds(stop_us).substr(0, seconds(stop_us).size() - 3)),
                   within(start_us, stop_us)));
  // With the other filters: what both select.
  EXPECT_TRUE(same(as_perf_script("--comm wl_condvar --time " + seconds(start) + "," + seconds(stop)),
                   subset(within(start, stop), [&](const Sample& s) { return s.tid == recording().waiter.tid ||
                                                                             s.tid == recording().waiter.waker_tid; })));
}

// --time with perf's percent forms and with several ranges keeps the very samples perf script
// keeps: percentages of the first to the last sample, the ends rounded as perf rounds them.
TEST(ScriptFilters, TimePercentsAndSeveralRangesKeepWhatPerfScriptKeeps) {
  const std::vector<Sample> all = ours("");
  const std::vector<uint64_t> times = distinct_times(all);
  ASSERT_GE(times.size(), 30u);
  const uint64_t first = times.front(), last = times.back();  // HEADER_SAMPLE_TIME's
  // A percentage that falls on a sample's time (to the ns perf rounds it to), where perf's
  // rule of ending a range 1 ns early decides whether that sample is kept.
  const uint64_t on = times[times.size() / 3];
  char at[64];
  snprintf(at, sizeof at, "%.15g%%", 100.0 * static_cast<double>(on - first) / static_cast<double>(last - first));
  for (const std::string& args : {std::string("--time 10%/2"), std::string("--time 0%-10%"),
                                  std::string("--time 0%-10%,30%-40%"), std::string("--time 50%"),
                                  std::string("--time 10%/1,10%/3,10%/10"), std::string("--time 25%-75%"),
                                  std::string("--time 0%-") + at, std::string("--time ") + at + "-100%",
                                  "--time '" + seconds(times[3]) + "," + seconds(times[9]) + " " + seconds(times[15]) +
                                      "," + seconds(times[20]) + "'",
                                  "--time '," + seconds(times[5]) + " " + seconds(times[25]) + ",'"}) {
    SCOPED_TRACE(args);
    const auto kept = as_perf_script(args);
    EXPECT_GT(kept.size(), 0u);
    EXPECT_LT(kept.size(), all.size());
  }
  // The slices of a whole share no sample and miss none.
  size_t sliced = 0;
  for (int i = 1; i <= 4; ++i) sliced += ours("--time 25%/" + std::to_string(i)).size();
  EXPECT_EQ(sliced, all.size());
  // Several ranges keep what each keeps.
  EXPECT_TRUE(same(ours("--time 0%-10%,30%-40%"), [&] {
    auto both = ours("--time 0%-10%");
    for (const Sample& s : ours("--time 30%-40%")) both.push_back(s);
    std::sort(both.begin(), both.end());
    return both;
  }()));
}

// --cgroup, which perf script lacks, by the same rule: wl_condvar runs in a cgroup of its own,
// wl_sleep beside it does not. Its samples are those of wl_condvar's threads there (the waiter
// and its signaller, blocked or waking), and report --cgroup sums their blocks.
TEST(ScriptFilters, CgroupKeepsTheSamplesOfThreadsInIt) {
  TestCgroup cgroup{"filters"};
  ASSERT_EQ(cgroup.error(), "");
  TempDir dir;
  const std::string data = dir.file("cgroup.data");
  const std::string both = dir.file("both.sh");
  run("cat > " + both + " <<'EOF'\n" + kWorkloads + "wl_sleep -n 10 -m 10 &\n" +
      cgroup.run_inside(kWorkloads + "wl_condvar -n 10 -m 10") + "\nwait\nEOF");
  auto rec = run(kOffwake + " record --timeline -o " + data + " -- sh " + both);
  ASSERT_EQ(rec.status, 0) << rec.err;
  Truth waiter;
  for (const Truth& t : parse_truth(rec.out))
    if (t.function == "wl_wait_for_signal") waiter = t;
  ASSERT_GT(waiter.count, 0u) << rec.out;
  auto ran = run(kOffwake + " script -i " + data + " -s " + recording().printer + " --cgroup " + cgroup.path());
  ASSERT_EQ(ran.status, 0) << ran.err;
  std::vector<Sample> kept;
  std::istringstream in(ran.out);
  for (Sample s; in >> s.event >> s.tid >> s.cpu >> s.time_ns >> s.period >> s.functions;) kept.push_back(s);
  expect_truth(kept, waiter);
  EXPECT_FALSE(has_function(kept, "wl_sleep_for"));
  EXPECT_TRUE(std::all_of(kept.begin(), kept.end(), [&](const Sample& s) { return s.tid == waiter.tid || s.tid == waiter.waker_tid; }));
  EXPECT_TRUE(std::any_of(kept.begin(), kept.end(), [&](const Sample& s) { return s.event == "offwake-waker" && s.tid == waiter.waker_tid; }))
      << "the signaller's wakeups, selected by its own cgroup";
  uint64_t ns = 0;
  for (const Sample& s : kept)
    if (s.event == "offwake-time") ns += s.period;
  auto folded = run(kOffwake + " report --folded -i " + data + " --cgroup " + cgroup.path());
  ASSERT_EQ(folded.status, 0) << folded.err;
  uint64_t summed = 0;
  std::istringstream lines(folded.out);
  for (std::string line; std::getline(lines, line);) summed += std::stoull(line.substr(line.rfind(' ') + 1));
  EXPECT_EQ(summed, ns);
}

// The offwake-time event's samples and event count, as perf report --stdio's header says them.
std::pair<uint64_t, uint64_t> perf_report_totals(const std::string& args) {
  auto r = run("perf report --stdio -i " + recording().data + " " + args + " 2>/dev/null | grep -A1 \"of event 'offwake-time'\"");
  uint64_t samples = 0, count = 0;
  const size_t at = r.out.find("# Samples: "), ec = r.out.find("# Event count (approx.): ");
  if (at != std::string::npos) samples = std::stoull(r.out.substr(at + 11));
  if (ec != std::string::npos) count = std::stoull(r.out.substr(ec + 25));
  return {samples, count};
}

// perf offwake report --time and -C sum the blocks perf script shows and perf report counts.
TEST(ReportFilters, TimeAndCpuSumWhatPerfReportCounts) {
  const TimelineRecording& r = recording();
  const std::vector<Sample> all = ours("");
  const std::vector<uint64_t> times = distinct_times(all);
  ASSERT_GE(times.size(), 30u);
  for (const std::string& args : {"--time " + seconds(times[20]) + "," + seconds(times[times.size() - 20]),
                                 "--time " + seconds(times[20]) + ",", std::string("-C 1"),
                                 "--cpu 0 --time ," + seconds(times[times.size() / 2]), std::string("--time 10%/3"),
                                 std::string("--time 0%-20%,60%-70%"), std::string("-C 1 --time 50%"),
                                 "--time '" + seconds(times[times.size() / 4]) + "," + seconds(times[times.size() / 2]) + " " +
                                     seconds(times[times.size() * 3 / 4]) + ",'"}) {
    SCOPED_TRACE(args);
    uint64_t ns = 0, blocks = 0;
    for (const Sample& s : as_perf_script(args))
      if (s.event == "offwake-time") ns += s.period, ++blocks;
    auto folded = run(kOffwake + " report --folded -i " + r.data + " " + args);
    ASSERT_EQ(folded.status, 0) << folded.err;
    uint64_t summed = 0;
    std::istringstream in(folded.out);
    for (std::string line; std::getline(in, line);) summed += std::stoull(line.substr(line.rfind(' ') + 1));
    EXPECT_EQ(summed, ns);
    const auto [perf_samples, perf_count] = perf_report_totals(args);
    EXPECT_EQ(perf_samples, blocks);
    EXPECT_EQ(perf_count, ns);
    EXPECT_GT(blocks, 0u);
  }
  // -C 1 holds wl_condvar's waiter, whose truth the table keeps.
  auto folded = run(kOffwake + " report --folded -C 1 -i " + r.data + " | grep wl_wait_for_signal | grep -v wl_sleep_for");
  uint64_t ns = 0;
  std::istringstream in(folded.out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("wl_condvar;", 0) == 0) ns += std::stoull(line.substr(line.rfind(' ') + 1));
  EXPECT_NEAR(static_cast<double>(ns), static_cast<double>(r.waiter.blocked_ns), kBlockedTimeTolerance * r.waiter.blocked_ns);
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// One line on standard error, status 129, nothing run.
void expect_usage_error(const std::string& command, const std::string& says) {
  SCOPED_TRACE(command);
  auto r = run(command);
  EXPECT_EQ(r.status, 129);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
}

// --time and --cpu cannot cut a sample that sums a stack's blocks over the recording.
TEST(SampleFilters, AnAggregatedRecordingRefusesTimeAndCpu) {
  const TimelineRecording& r = recording();
  const std::string script = kOffwake + " script -i " + r.aggregated + " -s " + r.printer;
  const std::string report = kOffwake + " report -i " + r.aggregated;
  for (const std::string& command : {script, report}) {
    expect_usage_error(command + " --time 1,", "--time: " + r.aggregated + " sums each stack's blocks");
    expect_usage_error(command + " -C 0", "--cpu: " + r.aggregated + " sums each stack's blocks");
  }
  // A stream has no counters: its first sample of several blocks says it (a stack blocked
  // once before it, wl_sleep's first nap at times, is a block of its own and was seen).
  auto stream = run(kOffwake + " record -q -o - -- " + kWorkloads + "wl_sleep -n 5 -m 5 2>/dev/null | " + kOffwake +
                    " script -s " + r.printer + " --time 1,");
  EXPECT_EQ(stream.status, 129);
  EXPECT_EQ(std::count(stream.err.begin(), stream.err.end(), '\n'), 1) << stream.err;
  EXPECT_NE(stream.err.find("--time: a sample sums"), std::string::npos) << stream.err;
  // Nor has it the first and last sample times that percentages are of (perf's HINT: no
  // first/last sample time found).
  for (const std::string& reader : {" script -s " + r.printer, std::string(" report")}) {
    auto percent = run(kOffwake + " record -q --timeline -o - -- " + kWorkloads + "wl_sleep -n 5 -m 5 2>/dev/null | " +
                       kOffwake + reader + " --time 10%/2");
    EXPECT_EQ(percent.status, 129) << reader;
    EXPECT_EQ(std::count(percent.err.begin(), percent.err.end(), '\n'), 1) << percent.err;
    EXPECT_NE(percent.err.find("--time '10%/2': percentages are of the recording's first to last sample"), std::string::npos)
        << percent.err;
  }
  // --comm and the others need no sample per block.
  EXPECT_EQ(run(script + " --comm wl_sleep").status, 0);
}

TEST(SampleFilters, BadListsAndTimesAreUsageErrors) {
  const TimelineRecording& r = recording();
  for (const std::string& command : {kOffwake + " script -i " + r.data + " -s " + r.printer, kOffwake + " report -i " + r.data}) {
    for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
             {"--time abc", "--time 'abc': expected start,stop"},
             {"--time 2,1", "--time '2,1': '2,1' stops before it starts"},
             {"--time '1,3 2,4'", "--time '1,3 2,4': '2,4' does not start after the range before it ends"},
             {"--time 1,2,3", "--time '1,2,3': expected start,stop"},
             {"--time 1.1234567890,", "'1.1234567890' is not a time in seconds"},
             {"--time -1,", "'-1' is not a time in seconds"},
             {"--time ''", "--time '': expected start,stop"},
             {"--time 10%/0", "--time '10%/0': '10%/0' is not one of perf's percent forms"},
             {"--time 0%-10%,20%", "--time '0%-10%,20%': '20%' is not one of perf's percent forms"},
             {"--cpu x", "--cpu 'x': 'x' is not a cpu"},
             {"-C 3-1", "'3-1' is not a cpu"},
             {"-C 4096", "'4096' is not a cpu"},
             {"--cpu ''", "--cpu: an empty list"},
             {"--cpu ,", "--cpu: an empty list"},
             {"--comm ''", "--comm: an empty list"},
             {"-c ''", "--comms: an empty list"},
             {"--pid x", "--pid: 'x' is not a pid"},
             {"--pid 1,,2", "--pid: '' is not a pid"},
             {"--pid 0", "--pid: '0' is not a pid"},
             {"--tid -5", "--tid: '-5' is not a thread id"},
             {"--tid ''", "--tid: an empty list"},
             {"--cgroup system.slice", "a cgroup path starts with '/'"},
         })
      expect_usage_error(command + " " + args, says);
  }
}

// perf offwake script -g python writes perf-script.py, as perf script -g python does, which
// runs as it is: a line per sample that perf script shows.
TEST(ScriptSkeleton, GeneratedScriptRunsAsItIs) {
  const TimelineRecording& r = recording();
  TempDir here;
  auto generated = run("cd " + here.path() + " && " + kOffwake + " script -g python");
  ASSERT_EQ(generated.status, 0) << generated.err;
  EXPECT_EQ(generated.err, "generated Python script: perf-script.py\n");
  const std::string skeleton = here.file("perf-script.py");
  struct stat st {};
  ASSERT_EQ(stat(skeleton.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u) << "output files are the owner's only";
  for (const char* handler : {"def trace_begin(", "def process_event(param_dict)", "def trace_end("})
    EXPECT_NE(read_file(skeleton).find(handler), std::string::npos) << handler;
  auto ran = run(kOffwake + " script -i " + r.data + " -s " + skeleton);
  ASSERT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.err, "");
  EXPECT_EQ(first_line(ran.out), "in trace_begin");
  EXPECT_NE(ran.out.find("\nin trace_end\n"), std::string::npos);
  uint64_t lines = 0, woken = 0;
  std::istringstream in(ran.out);
  for (std::string line; std::getline(in, line);) {
    lines += line.rfind("offwake-", 0) == 0;
    woken += line.rfind("\twoken by ", 0) == 0;
  }
  EXPECT_EQ(lines, perfs("").size());
  EXPECT_GE(woken + max_missed_blocks(r.sleeper.count), r.sleeper.count);
  // With a filter, the lines of the samples perf script shows with it.
  auto filtered = run(kOffwake + " script -i " + r.data + " -s " + skeleton + " --comm wl_condvar");
  uint64_t filtered_lines = 0;
  std::istringstream fin(filtered.out);
  for (std::string line; std::getline(fin, line);) filtered_lines += line.rfind("offwake-", 0) == 0;
  EXPECT_EQ(filtered_lines, perfs("--comm wl_condvar").size());

  TempDir other;
  expect_usage_error("cd " + other.path() + " && " + kOffwake + " script -g perl", "-g 'perl': the only script language is python");
  EXPECT_EQ(run("ls " + other.path()).out, "") << "nothing written";
}

}  // namespace
}  // namespace offwake::test
