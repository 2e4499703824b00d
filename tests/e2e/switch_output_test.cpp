// End to end, as root: perf offwake record --switch-output, a file per window. Each file is read
// alone by Debian's perf (its threads named, its symbols resolved), and the windows' blocks
// add up to what the workload measured: no block counted twice at a switch, none lost.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/blocked_samples.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "support/truth.h"
#include "support/usage_error.h"
#include "support/window_files.h"

namespace offwake::test {
namespace {

// The "Dump FILE" lines of the recorder's stderr, in order.
std::vector<std::string> dumped(const std::string& err) {
  std::vector<std::string> out;
  static const std::regex kDump(R"(\[ perf offwake record: Dump (\S+) \])");
  for (std::sregex_iterator it(err.begin(), err.end(), kDump), end; it != end; ++it) out.push_back((*it)[1]);
  return out;
}

// The windows' "dump data" lines: each window's sample stacks missing and asked for, summed,
// must be the whole recording's ("M of N sample stacks missing" at the end): a long run's
// user sees the stack maps fill window by window.
void expect_windows_missing_stacks_add_up(const std::string& err, size_t files) {
  static const std::regex kWindow(R"(dump data: .*, (\d+) of (\d+) sample stacks missing \((\d+) store full\) \])");
  static const std::regex kTotal(R"(record: (\d+) of (\d+) sample stacks missing \(failed: .*store full (\d+),)");
  uint64_t missing = 0, asked = 0, full = 0;
  size_t lines = 0;
  for (std::sregex_iterator it(err.begin(), err.end(), kWindow), end; it != end; ++it, ++lines) {
    missing += std::stoull((*it)[1]);
    asked += std::stoull((*it)[2]);
    full += std::stoull((*it)[3]);
  }
  EXPECT_EQ(lines, files) << err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, kTotal)) << err;
  EXPECT_EQ(missing, std::stoull(m[1])) << err;
  EXPECT_EQ(asked, std::stoull(m[2])) << err;
  EXPECT_EQ(full, std::stoull(m[3])) << err;
  EXPECT_GT(asked, 0u) << err;
}

// A window's blocks of a truth added to the sum over the windows.
void add_window(Blocked& sum, const Blocked& b) {
  sum.ns += b.ns;
  sum.count += b.count;
  sum.counted &= b.counted;
  sum.unseen += b.unseen;
  sum.unseen_ns += b.unseen_ns;
}

// Every window's samples of the truth's blocks, summed: each file read alone by Debian's perf
// script, which must name the waker's thread and resolve its function from that file only.
struct Windows {
  std::vector<std::vector<ScriptSample>> samples;  // per file (Blocked points into these)
  Blocked sum;
  size_t files_with_blocks = 0;
};

Windows read_windows(const std::vector<std::string>& files, const Truth& t, const std::string& record_err) {
  Windows w;
  w.samples.reserve(files.size());
  w.sum.truth = t;
  w.sum.counted = true;
  for (const auto& f : files) {
    struct stat st {};
    EXPECT_EQ(stat(f.c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f;
    auto script = run(std::string("perf script ") + kPerfScriptFields + " -i " + f);
    EXPECT_EQ(script.status, 0) << f << ": " << script.err;
    EXPECT_EQ(script.err, "") << f;
    w.samples.push_back(parse_perf_script(script.out));
    add_block_counts(w.samples.back(), f);
    Blocked b = blocked_in(w.samples.back(), t, blocks_without_waker(record_err));
    if (b.count) ++w.files_with_blocks;
    add_window(w.sum, b);
    for (const ScriptSample* s : b.wakers) {
      // Named and symbolized by this file alone.
      EXPECT_EQ(s->comm, "wl_pipe") << f;
      EXPECT_TRUE(s->has_frame(t.waker_function)) << f << ": waker stack lacks " << t.waker_function;
    }
    for (const ScriptSample* s : b.blocked) EXPECT_EQ(s->comm, "wl_pipe") << f;

    auto report = run("perf report --stdio --no-children --sort comm,sym -g none -i " + f);
    EXPECT_EQ(report.status, 0) << f << ": " << report.err;
    if (b.count) {
      EXPECT_NE(report.out.find("of event 'offwake-time'"), std::string::npos) << f << "\n" << report.out;
      EXPECT_NE(report.out.find("wl_pipe"), std::string::npos) << f << "\n" << report.out;
    }
  }
  expect_misses_within_truth(w.sum.unseen, w.sum.unseen_ns, t, "without a waker");
  return w;
}

// `perf offwake record -o DIR/perf.data ARGS`, expecting a file per window.
RunResult record_windows(const TempDir& dir, const std::string& args) {
  return run(kOffwake + " record -o " + dir.file("perf.data") + " " + args);
}

// The acceptance case: --switch-output=1s of a 3-second workload.
TEST(SwitchOutput, TimedWindowsAddUpToTheTruth) {
  TempDir dir;
  auto rec = record_windows(dir, "--switch-output=1s -- " + kWorkloads + "wl_pipe -n 150 -m 20");
  ASSERT_EQ(rec.status, 0) << rec.err;
  auto truth = parse_truth(rec.out);
  ASSERT_EQ(truth.size(), 1u) << rec.out;
  const auto files = window_files(dir);
  ASSERT_GE(files.size(), 2u) << rec.err;
  EXPECT_EQ(dumped(rec.err), files) << rec.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("perf.data"))) << "the -o name itself is never written";
  expect_windows_missing_stacks_add_up(rec.err, files.size());
  Windows w = read_windows(files, truth[0], rec.err);
  EXPECT_GE(w.files_with_blocks, 2u) << "the workload's blocks are spread over the windows";
  expect_truth_blocks(w.sum, "all windows");

  // perf offwake report reads the windows together, and sums them.
  std::string inputs;
  for (const auto& f : files) inputs += " -i " + f;
  auto folded = run(kOffwake + " report --folded" + inputs);
  ASSERT_EQ(folded.status, 0) << folded.err;
  uint64_t ns = 0;
  std::istringstream lines(folded.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("wl_wait_for_message") == std::string::npos || line.rfind("wl_pipe;", 0) != 0) continue;
    ns += std::stoull(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_EQ(ns, w.sum.ns) << "report's sum of the windows against perf script's";
  auto table = run(kOffwake + " report --stdio" + inputs);
  EXPECT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("wl_wait_for_message"), std::string::npos);
}

// --switch-output alone is --switch-output=signal: SIGUSR2 ends a window. The signal is sent
// half a second after the workload has started (its "ready" line: the recorder starts it once
// attached, which may take more than a second), so that both windows have its blocks.
TEST(SwitchOutput, Sigusr2EndsAWindow) {
  TempDir dir;
  auto rec = run("cd " + dir.path() + " && { " + kOffwake + " record -o perf.data --switch-output -- " + kWorkloads +
                 "wl_pipe -n 100 -m 20 -r 1 > out & pid=$!; until grep -q '^ready ' out; do sleep 0.05; done; "
                 "sleep 0.5; kill -USR2 $pid; wait $pid; status=$?; cat out; exit $status; }");
  ASSERT_EQ(rec.status, 0) << rec.err;
  auto truth = parse_truth(rec.out);
  ASSERT_EQ(truth.size(), 1u) << rec.out;
  const auto files = window_files(dir);
  ASSERT_EQ(files.size(), 2u) << rec.err;  // the signal's, then the end's
  Windows w = read_windows(files, truth[0], rec.err);
  EXPECT_EQ(w.files_with_blocks, 2u);
  expect_truth_blocks(w.sum, "both windows");
}

// --switch-max-files=2: the newest two files are kept, the older ones removed.
TEST(SwitchOutput, MaxFilesKeepsTheNewest) {
  TempDir dir;
  auto rec = record_windows(dir, "--switch-output=1s --switch-max-files=2 -- " + kWorkloads + "wl_pipe -n 175 -m 20");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const auto all = dumped(rec.err);
  ASSERT_GE(all.size(), 3u) << rec.err;
  EXPECT_EQ(window_files(dir), std::vector<std::string>(all.end() - 2, all.end()));
  // The summary says how many of the files it wrote are gone.
  EXPECT_NE(rec.err.find(std::to_string(all.size()) + " files (" + std::to_string(all.size() - 2) +
                         " removed by --switch-max-files), the last "),
            std::string::npos)
      << rec.err;
  for (const auto& f : window_files(dir)) {
    auto script = run("perf script -i " + f + " > /dev/null");
    EXPECT_EQ(script.status, 0) << f << ": " << script.err;
  }
}

// Blocks written as they end (--timeline) and the tracepoint back end (paired in user space)
// switch too, each block in one window.
TEST(SwitchOutput, TimelineAndTracepointBackEnd) {
  for (const std::string mode : {"--timeline", "--backend tracepoint"}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    auto rec = record_windows(dir, mode + " --switch-output=1s -- " + kWorkloads + "wl_pipe -n 150 -m 20");
    ASSERT_EQ(rec.status, 0) << rec.err;
    auto truth = parse_truth(rec.out);
    ASSERT_EQ(truth.size(), 1u) << rec.out;
    const auto files = window_files(dir);
    ASSERT_GE(files.size(), 2u) << rec.err;
    Windows w = read_windows(files, truth[0], rec.err);
    EXPECT_GE(w.files_with_blocks, 2u);
    expect_truth_blocks(w.sum, mode);
  }
}

// A recording that never ends meets more stacks than its store holds: each window's file must
// still have every stack of its blocks. wl_stack_phases blocks from 8 user stacks of its own in
// each of its 16 phases of 0.4 s: 128 in the run, more than a store of 96 holds, 20 to 30 in a
// 1 s window. A store never emptied would be full by the tenth phase, and the blocks after it
// lose their user stacks: their time falls out of phase_block, and out of the truth's bounds.
// Its -r thread blocks in phase_return in the first phase and the last only: by then its
// stacks were emptied from the store, and its memos of them must not be replayed as they are.
TEST(SwitchOutput, StackStoreKeepsEveryWindowsStacks) {
  TempDir dir;
  auto rec =
      record_windows(dir, "--stack-storage-size 96 --switch-output=1s -- " + kWorkloads + "wl_stack_phases -r");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const auto truths = parse_truth(rec.out);
  ASSERT_EQ(truths.size(), 2u) << rec.out;
  const auto files = window_files(dir);
  ASSERT_GE(files.size(), 5u) << rec.err;
  // The store was emptied, or this test tests nothing.
  EXPECT_NE(rec.err.find("[ perf offwake record: stack store emptied at "), std::string::npos) << rec.err;
  std::vector<Blocked> sums(truths.size());
  for (size_t t = 0; t < truths.size(); ++t) {
    sums[t].truth = truths[t];
    sums[t].counted = true;
  }
  std::vector<bool> phase_seen(16);
  for (const auto& f : files) {
    auto script = run(std::string("perf script ") + kPerfScriptFields + " -i " + f);
    ASSERT_EQ(script.status, 0) << f << ": " << script.err;
    auto samples = parse_perf_script(script.out);
    add_block_counts(samples, f);
    for (size_t t = 0; t < truths.size(); ++t) {
      Blocked b = blocked_in(samples, truths[t], blocks_without_waker(rec.err));
      add_window(sums[t], b);
      for (const ScriptSample* s : b.blocked)
        for (size_t p = 0; p < phase_seen.size(); ++p)
          if (s->has_frame("phase_" + std::to_string(p))) phase_seen[p] = true;
    }
  }
  for (const Blocked& sum : sums) {
    expect_misses_within_truth(sum.unseen, sum.unseen_ns, sum.truth, "without a waker");
    expect_truth_blocks(sum, sum.truth.function + ", all windows");
  }
  for (size_t p = 0; p < phase_seen.size(); ++p) EXPECT_TRUE(phase_seen[p]) << "no stack of phase_" << p;
}

// Bad values: one line that names the option, and a non-zero status, before anything runs.
TEST(SwitchOutput, BadValuesAreOneLine) {
  TempDir dir;
  const std::string out = " -o " + dir.file("perf.data") + " ";
  for (const std::string bad : {"--switch-output=10x", "--switch-output=0s", "--switch-output=", "--switch-output=s",
                                "--switch-output=-5s", "--switch-output=5000000000000G",
                                "--switch-output --switch-max-files=0", "--switch-output --switch-max-files=many",
                                "--switch-max-files=3", "--switch-output=1s -o -"}) {
    SCOPED_TRACE(bad);
    auto r = run(kOffwake + " record" + out + bad + " -- true");
    EXPECT_EQ(r.status, 129) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("switch-"), std::string::npos) << r.err;
    EXPECT_TRUE(window_files(dir).empty());
  }
}

}  // namespace
}  // namespace offwake::test
