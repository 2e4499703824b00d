// Every sub-command parses its options with perf's own libsubcmd: the same abbreviations,
// --no-<flag> forms, usage text and exit status 129 as the rest of perf. Each bad option of
// each sub-command gets a first line that names it, and nothing runs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/paths.h"
#include "support/recording.h"
#include "support/run.h"
#include "support/usage_error.h"

namespace offwake::test {
namespace {

struct BadOption {
  std::string args;
  std::string says;  // part of the first line
};

void expect_all_refused(const std::string& command, const std::vector<BadOption>& cases, const TempDir& dir) {
  for (const BadOption& c : cases) {
    SCOPED_TRACE(command + " " + c.args);
    std::string out = dir.file("never.data");
    auto r = run(kOffwake + " " + command + " " + c.args);
    expect_usage_error(r, c.says, command);
    struct stat st {};
    EXPECT_NE(stat(out.c_str(), &st), 0) << "a refused command line wrote " << out;
    unlink(out.c_str());
  }
}

TEST(Options, EveryBadRecordOptionIsNamed) {
  TempDir dir;
  const std::string o = "-o " + dir.file("never.data") + " ";
  expect_all_refused("record", {
      {o + "--no-such-option", "unknown option `no-such-option'"},
      {o + "-X", "unknown switch `X'"},
      {o + "--duration", "option `duration' requires a value"},
      {o + "--duration x -- true", "option `duration' expects a finite non-negative number, not 'x'"},
      {o + "--duration nan -- true", "option `duration' expects a finite non-negative number, not 'nan'"},
      {o + "--dur -1 -- true", "option `duration' expects a finite non-negative number, not '-1'"},
      {o + "--min-block inf -- true", "option `min-block' expects a finite"},
      {o + "--max-block -inf -- true", "option `max-block' expects a finite"},
      {o + "--min-block 1e300 -- true", "--min-block and --max-block take 0 to 1.8e13 microseconds"},
      {o + "--min-block 10 --max-block 5 -- true", "--max-block is below --min-block"},
      {o + "--duration 2e10 -- true", "--duration takes 0 (no limit) to 1.8e10 seconds"},
      {o + "-t x -- true", "option `tid': 'x' is not a thread id"},
      {o + "-t -1 -- true", "option `tid': '-1' is not a thread id"},
      {o + "-t 0 -- true", "option `tid': '0' is not a thread id"},
      // Not taken modulo 2^32 (thread 1), nor any 32-bit value below.
      {o + "-t 4294967297 -- true", "option `tid': '4294967297' is not a thread id"},
      // A list, as perf record -t takes it: every item a thread id, and not an empty one.
      {o + "-t 1,x -- true", "option `tid': 'x' is not a thread id"},
      {o + "-t 1,,2 -- true", "option `tid': '' is not a thread id"},
      {o + "-t '' -- true", "option `tid': -t takes a list of thread ids, not ''"},
      {o + "--tid= -- true", "option `tid': -t takes a list of thread ids, not ''"},
      {o + "-p 4294967297", "option `pid': '4294967297' is not a pid"},
      {o + "--map-size 0 -- true", "--map-size must be from 1 to 16777216"},
      {o + "--map-size 4294967297 -- true", "--map-size must be from 1 to 16777216"},
      {o + "--stack-storage-size 4294967297 -- true", "--stack-storage-size must be from 1 to 16777216"},
      {o + "--stack-storage-size 0 -- true", "--stack-storage-size must be from 1 to 16777216"},
      {o + "--max-stack 0 -- true", "--max-stack must be from 1 to 127"},
      {o + "--max-stack 4294967296 -- true", "--max-stack must be from 1 to 127"},
      {o + "-p x1", "option `pid': 'x1' is not a pid"},
      // -p "$(pgrep -d, server)" without a server: not the whole machine.
      {o + "-p ''", "option `pid': -p takes a list of pids, not ''"},
      {o + "--pid=", "option `pid': -p takes a list of pids, not ''"},
      {o + "-p 999999999", "not a pid"},
      {o + "--map-size 1.5 -- true", "option `map-size' expects a non-negative integer, not '1.5'"},
      {o + "--stack-storage-size '' -- true", "option `stack-storage-size' expects a non-negative integer"},
      {o + "--max-stack x -- true", "option `max-stack' expects a non-negative integer"},
      {o + "--process-map-size 0 -- true", "--process-map-size must be from 1 to 16777216"},
      {o + "--chain-depth 0 -- true", "--chain-depth must be from 1 to 7"},
      {o + "--chain-depth 8 -- true", "--chain-depth must be from 1 to 7"},
      {o + "--ringbuf-size 3 -- true", "--ringbuf-size must be a power of two"},
      {o + "--ringbuf-size 4 -- true", "--ringbuf-size goes with --timeline"},
      {o + "--mmap-pages 3 --backend tracepoint -- true", "--mmap-pages must be a power of two"},
      {o + "--mmap-pages 64 --backend bpf -- true", "--mmap-pages sizes the tracepoint back end"},
      {o + "--backend bogus -- true", "--backend takes bpf, tracepoint or auto, not 'bogus'"},
      {o + "--backend tracepoint --eager -- true", "--eager needs the BPF back end"},
      {o + "--user-walker gdb -- true", "--user-walker takes auto, fp or kernel, not 'gdb'"},
      {o + "--state X -- true", "X"},
      {o + "-u --kernel-threads-only -- true", "--user-threads-only and --kernel-threads-only exclude each other"},
      {o + "-F 99 -- true", "-e, -F and -c go with --on-cpu"},
      {o + "--on-cpu -F 99 -c 1000 -- true", "-F and -c exclude each other"},
      {o + "--on-cpu -F x -- true", "option `freq' expects a non-negative integer"},
      {o + "--on-cpu -F 0 -- true", "-F must be at least 1 Hz"},
      {o + "--on-cpu -c 0 -- true", "-c must be at least 1"},
      {o + "--on-cpu -F 4294967297 -- true", "-F 4294967297 is above kernel.perf_event_max_sample_rate"},
      {o + "-F 0 -- true", "-e, -F and -c go with --on-cpu"},
      {o + "-e cpu-clock -- true", "-e, -F and -c go with --on-cpu"},
      {o + "--on-cpu -e no-such-event -- true", "no-such-event"},
      {o + "--max 5 -- true", "Ambiguous option: max (could be --max-block or --max-stack)"},
      {o + "--eager=1 -- true", "option `eager' takes no value"},
      {o + "--no-output -- true", "option `no-output' isn't available"},
      {o + "-G", "switch `G' requires a value"},
      {o + "--switch-output=10x -- true", "--switch-output takes signal, a time (10s, 5m, 1h, 1d) or a size"},
      {o + "--switch-max-files=3 -- true", "--switch-max-files goes with --switch-output"},
      {o + "--switch-output --switch-max-files=0 -- true", "--switch-max-files takes a number of files from 1"},
  }, dir);
}

// A usage error found after the parse is its message alone, with no errno text after it.
TEST(Options, UsageErrorsSayNoErrno) {
  TempDir dir;
  const std::string o = "-o " + dir.file("never.data") + " ";
  for (const std::string& command : std::vector<std::string>{
           "record " + o + "--state X -- true", "record " + o + "--switch-output=10x -- true",
        "record " + o + "--on-cpu -e no-such-event -- true", "report --sort bogus", "report --min 5",
        "report --pid x", "convert -i x.data " + o + "--state Q"}) {
    SCOPED_TRACE(command);
    auto r = run(kOffwake + " " + command);
    EXPECT_EQ(r.status, 129) << r.err;
    EXPECT_EQ(r.err.find("Invalid argument"), std::string::npos) << r.err;
  }
}

TEST(Options, EveryBadReportOptionIsNamed) {
  TempDir dir;
  expect_all_refused("report", {
      {"--no-such-option", "unknown option `no-such-option'"},
      {"-i", "switch `i' requires a value"},
      {"--svg", "option `svg' requires a value"},
      {"--pprof", "option `pprof' requires a value"},
      {"--svg - --folded", "one output at most goes to standard output ('-')"},
      {"--svg - --pprof -", "one output at most goes to standard output ('-')"},
      {"--pprof - --stdio", "one output at most goes to standard output ('-')"},
      {"--comm", "option `comm' requires a value"},
      {"--min 5", "5"},
      {"--min -1ms", "-1ms"},
      {"--sort bogus", "--sort takes one of time, count, avg, max, or cgroup before one of them, not 'bogus'"},
      {"--sort count,cgroup", "--sort takes one of time, count, avg, max, or cgroup before one of them, not 'count,cgroup'"},
      {"--cgroup docker", "--cgroup 'docker': a cgroup path starts with '/'"},
      {"--unit ms --folded", "--unit must be ns or us, not 'ms'"},
      {"--pid x1", "x1"},
      {"--tid 1,y", "y"},
      {"--kernel-only --user-only", "--kernel-only and --user-only exclude each other"},
      {"--stdio=yes", "option `stdio' takes no value"},
      {"stray", "unexpected argument 'stray'"},
  }, dir);
}

TEST(Options, EveryBadScriptOptionIsNamed) {
  TempDir dir;
  expect_all_refused("script", {
      {"--no-such-option", "unknown option `no-such-option'"},
      {"-s", "switch `s' requires a value"},
      {"-i", "switch `i' requires a value"},
      {"-i x.data", "-s <script.py> is required"},
      {"-i a.data -i b.data -s x.py", "-i given twice ('a.data', 'b.data'): one input at a time"},
      {"-i a.data --input=a.data -s x.py", "-i given twice"},
  }, dir);
  // One line, as the command's other usage errors: a second -i is not silently the input.
  auto twice = run(kOffwake + " script -i a.data -i b.data -s x.py");
  EXPECT_EQ(twice.err, "perf offwake script: -i given twice ('a.data', 'b.data'): one input at a time (see 'perf "
                       "offwake script -h')\n");
}

TEST(Options, EveryBadConvertOptionIsNamed) {
  TempDir dir;
  const std::string o = "-o " + dir.file("never.data") + " ";
  expect_all_refused("convert", {
      {"--no-such-option", "unknown option `no-such-option'"},
      {"-i x.data", "-o/--output is required"},
      {"-o", "switch `o' requires a value"},
      {o + "--min-block x", "option `min-block' expects a finite non-negative number, not 'x'"},
      {o + "--min-block 10 --max-block 5", "--max-block is below --min-block"},
      {o + "--state Q", "Q"},
      {o + "stray", "unexpected argument 'stray'"},
      {"-i same.data -o same.data", "-o names the input file"},
  }, dir);
}

// -h is perf's usage on standard error with status 129, as `perf record -h` gives; every
// option it lists has its entry in the sub-command's man page.
TEST(Options, HelpIsPerfsUsageAndEveryOptionIsDocumented) {
  for (const std::string command : {"record", "report", "script", "convert"}) {
    SCOPED_TRACE(command);
    auto r = run(kOffwake + " " + command + " -h");
    EXPECT_EQ(r.status, 129);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(first_line(r.err).rfind(" Usage: perf offwake " + command, 0), 0u) << r.err;
    const std::string man =
        read_file(std::string(OFFWAKE_SOURCE_DIR) + "/perf-plugin/Documentation/perf-offwake-" + command + ".txt");
    std::set<std::string> listed;
    std::regex long_option(R"(^\s+(?:-\S, )?--([a-z0-9-]+))");
    std::smatch m;
    size_t pos = 0;
    while (pos < r.err.size()) {
      size_t end = r.err.find('\n', pos);
      std::string line = r.err.substr(pos, end - pos);
      if (std::regex_search(line, m, long_option)) listed.insert(m[1]);
      pos = end == std::string::npos ? r.err.size() : end + 1;
    }
    EXPECT_GE(listed.size(), 2u) << r.err;
    for (const std::string& name : listed)
      EXPECT_NE(man.find("\n--" + name), std::string::npos) << "--" << name << " is not in the man page";
    // --help says the same, and so does "help COMMAND".
    EXPECT_EQ(run(kOffwake + " " + command + " --help").err, r.err);
    auto help = run(kOffwake + " help " + command);
    EXPECT_EQ(help.status, 129);
    EXPECT_EQ(help.err, r.err);
  }
}

// What libsubcmd brings: an unambiguous abbreviation (--dur), --no-<flag>, combined short
// flags (-aq) and -oFILE all work as in perf.
// As perf record's target check: -p and -t override -a, and -t overrides -p, with a warning
// (the recording is the narrower one); the blocked threads recorded are only the target's (and
// with -p its children's).
TEST(Options, OverriddenTargetsAreWarnedAbout) {
  TempDir dir;
  const std::string out = dir.file("target.data");
  for (const auto& [targets, says] : std::vector<std::pair<std::string, std::string>>{
           {"-a -p $p", "warning: -p overrides -a"},
           {"-a -t $p", "warning: -t overrides -a"},
           {"-p 1 -t $p", "warning: -t overrides -p: only thread "}}) {
    SCOPED_TRACE(targets);
    // A sleeper that blocks every 20 ms while the recording runs.
    auto r = run("(while :; do sleep 0.02; done) & p=$!; timeout 60 " + kOffwake + " record -q " + targets +
                 " --duration 0.5 -o " + out + "; rc=$?; kill $p; echo $p; exit $rc");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    const std::string pid = first_line(r.out);
    auto s = run("perf script -i " + out + " -F comm,pid,tid,event 2>/dev/null | grep offwake-time | sort -u");
    ASSERT_EQ(s.status, 0);
    std::istringstream lines(s.out);
    int target = 0;
    for (std::string line; std::getline(lines, line);) {
      std::string comm, ids;
      std::istringstream(line) >> comm >> ids;
      if (ids == pid + "/" + pid) ++target;
      // -p follows the target's children: its sleeps (not with -t).
      else EXPECT_TRUE(comm == "sleep" && targets.find("-p $p") != std::string::npos) << s.out;
    }
    EXPECT_EQ(target, 1) << "the target's blocks are missing:\n" << s.out;
  }
}

TEST(Options, AbbreviationsNegationsAndCombinedFlagsWork) {
  TempDir dir;
  const std::string out = dir.file("abbrev.data");
  // --duration 0.5 bounds the run; timeout only guards against a parser that ignored it.
  auto r = run("timeout 60 " + kOffwake + " record -aq --no-eager --dur 0.5 -o" + out);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto rep = run(kOffwake + " report --no-waker --fold -i " + out);
  EXPECT_EQ(rep.status, 0) << rep.err;
  EXPECT_NE(rep.out, "");
  EXPECT_EQ(rep.out.find(";--;"), std::string::npos) << "--no-waker kept the wakers";
}

}  // namespace
}  // namespace offwake::test
