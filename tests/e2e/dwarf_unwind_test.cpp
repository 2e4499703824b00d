// End to end, as root: user stacks of code built without frame pointers (dwarf_target.c, -O2
// -fomit-frame-pointer, through glibc's wrappers) from user stack copies unwound with libdwfl,
// by both paths that read them: perf offwake convert of Debian perf's
// `perf record -e sched:sched_switch -e sched:sched_waking --call-graph dwarf`, and
// `perf offwake record --backend tracepoint --call-graph dwarf`. Every blocked and waker user
// stack of the workload's truth equals, frame by frame (symbol and address), one that Debian's
// perf script unwinds itself from such a recording, and reaches main and the program's start;
// the blocked time is the workload's own within 5%, every block counted.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

#include "support/blocked_samples.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "support/truth.h"

namespace offwake::test {
namespace {

// On CPU 0, as the other tracepoint tests (tracepoint_test.cpp): perf's tracepoint events on
// this VM's CPU 1 miss what happens while it idles.
const std::string kPinned = "taskset -c 0 ";
const std::string kTarget = OFFWAKE_BINARY_DIR "/tests/e2e/dwarf_target -n 10 -m 20";
// Inlined frames are perf's own addition from debug info, not frames of the stack.
const std::string kFields = std::string(kPerfScriptFields) + " --no-inline";
constexpr int kDepth = 5;  // dwarf_target_descend's frames (dwarf_target.c)

using Stack = std::vector<std::pair<uint64_t, std::string>>;  // user frames, leaf first

Stack user_stack(const ScriptSample& s) {
  Stack out;
  for (const auto& f : s.frames)
    if (!f.kernel()) out.emplace_back(f.ip, f.sym);
  return out;
}

std::string show(const Stack& s) {
  std::string out;
  for (const auto& [ip, sym] : s) out += "\n\t" + sym;
  return out;
}

// The workload's own functions in the stack, from `leaf` down (`callers`, to main), below a
// glibc wrapper and above glibc's start and _start.
void expect_complete(const Stack& s, const std::string& leaf, const std::vector<std::string>& callers) {
  SCOPED_TRACE(show(s));
  auto it = std::find_if(s.begin(), s.end(), [&](const auto& f) { return f.second == leaf; });
  ASSERT_NE(it, s.end()) << leaf;
  EXPECT_NE(it, s.begin()) << "glibc's wrapper above " << leaf;
  for (const std::string& caller : callers) {
    ++it;
    ASSERT_NE(it, s.end()) << "ends before " << caller;
    EXPECT_EQ(it->second, caller);
  }
  EXPECT_EQ(s.back().second, "_start");
}

std::vector<std::string> blocked_callers() {
  std::vector<std::string> c(kDepth, "dwarf_target_descend");
  c.push_back("dwarf_target_serve");
  c.push_back("main");
  return c;
}

// Debian's perf record of the workload with stack copies, per task, and the user stacks its
// perf script unwinds for the truth's blocks (sched_switch of the blocked thread in
// dwarf_target_wait) and wakeups (sched_waking of the waker in dwarf_target_kick).
struct Stock {
  RunResult record, script;
  std::vector<Truth> truth;
  std::set<Stack> blocked, wakers;
};

Stock stock_attempt(const TempDir& dir) {
  Stock s;
  // perf itself is pinned, and the workload with it: under perf record -- taskset ..., Debian's
  // perf fails to unwind most recordings (stock_record).
  s.record = run(kPinned + kDebianPerf + " record -q -B -o " + dir.file("stock.data") +
                 " -e sched:sched_switch -e sched:sched_waking --switch-events --call-graph dwarf -- " + kTarget);
  s.truth = parse_truth(s.record.out);
  s.script = run(std::string(kDebianPerf) + " script " + kFields + " -i " + dir.file("stock.data"));
  if (s.truth.size() != 1) return s;
  for (const ScriptSample& x : parse_perf_script(s.script.out)) {
    if (x.event == "sched:sched_switch" && x.tid == s.truth[0].tid && x.has_frame("dwarf_target_wait"))
      s.blocked.insert(user_stack(x));
    if (x.event == "sched:sched_waking" && x.tid == s.truth[0].waker_tid && x.has_frame("dwarf_target_kick"))
      s.wakers.insert(user_stack(x));
  }
  return s;
}

// Debian's perf 6.1 is the reference, and it failed now and then: perf record or perf script
// aborted ("assertion failed at util/build-id.c", stack smashing: see convert_test.cpp's
// stock_record) while a perf offwake record asked for build ids. Its libunwind unwinder also stopped after the first frame of every stack of
// 60% of recordings (18 of 30, 2026-12-04; "access_mem ... not inside range" with perf script
// -v) while each recording was whole, when it ran `taskset -c 0 dwarf_target` as its command,
// two images in one process: which recordings failed depended on the address-space layout
// (under setarch -R, every one did). Eight attempts failed together once in a CI rehearsal.
// With perf pinned from outside (stock_attempt), 16 of 16 recordings were complete. Still, a
// recording is made again, up to eight times, until perf completes the truth's stacks itself;
// the attempts are a test property.
constexpr int kStockAttempts = 8;

Stock stock_record(const TempDir& dir) {
  Stock s;
  int attempt = 0;
  for (; attempt < kStockAttempts; ++attempt) {
    s = stock_attempt(dir);
    const auto reaches_main = [](const Stack& st) {
      return std::any_of(st.begin(), st.end(), [](const auto& f) { return f.second == "main"; });
    };
    if (s.record.status == 0 && s.script.status == 0 && !s.blocked.empty() && !s.wakers.empty() &&
        std::all_of(s.blocked.begin(), s.blocked.end(), reaches_main) &&
        std::all_of(s.wakers.begin(), s.wakers.end(), reaches_main))
      break;
    usleep(200'000);
  }
  ::testing::Test::RecordProperty("stock_attempts", attempt + 1);  // kStockAttempts + 1: none complete
  return s;
}

void expect_stock_complete(const Stock& s) {
  ASSERT_EQ(s.record.status, 0) << s.record.err;
  ASSERT_EQ(s.script.status, 0) << s.script.err;
  ASSERT_EQ(s.truth.size(), 1u) << s.record.out;
  ASSERT_FALSE(s.blocked.empty()) << s.script.out.substr(0, 3000);
  ASSERT_FALSE(s.wakers.empty()) << s.script.out.substr(0, 3000);
  for (const Stack& b : s.blocked) expect_complete(b, "dwarf_target_wait", blocked_callers());
  for (const Stack& w : s.wakers) expect_complete(w, "dwarf_target_kick", {"main"});
}

// An offwake recording of the workload, read by Debian's perf script: the truth's blocks all
// there within 5%, each blocked and waker user stack one that perf unwound itself.
void expect_like_stock(const std::vector<ScriptSample>& samples, const Truth& t, const std::string& summary,
                       const Stock& stock) {
  SCOPED_TRACE(summary);
  Blocked b = blocked_in(samples, t, blocks_without_waker(summary));
  expect_truth_blocks(b);
  ASSERT_FALSE(b.blocked.empty());
  ASSERT_FALSE(b.wakers.empty());
  for (const ScriptSample* s : b.blocked) {
    const Stack u = user_stack(*s);
    EXPECT_TRUE(stock.blocked.count(u)) << "a blocked stack perf did not unwind:" << show(u);
    expect_complete(u, "dwarf_target_wait", blocked_callers());
  }
  for (const ScriptSample* w : b.wakers) {
    const Stack u = user_stack(*w);
    EXPECT_TRUE(stock.wakers.count(u)) << "a waker stack perf did not unwind:" << show(u);
    expect_complete(u, "dwarf_target_kick", {"main"});
  }
  // The summary says what was unwound: at least the truth's stacks, blocked and waker, all
  // complete (checked above frame by frame; the count must not say otherwise).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(summary, m, std::regex(R"((\d+) user stacks unwound from stack copies, (\d+) complete)")));
  EXPECT_GE(std::stoull(m[2]), 2 * t.count);
  ::testing::Test::RecordProperty("unwound", m[1].str());
  ::testing::Test::RecordProperty("complete", m[2].str());
}

TEST(DwarfUnwind, ConvertGivesTheStacksPerfUnwinds) {
  TempDir dir;
  Stock stock = stock_record(dir);
  expect_stock_complete(stock);
  RunResult convert = run(kOffwake + " convert -i " + dir.file("stock.data") + " -o " + dir.file("offwake.data"));
  ASSERT_EQ(convert.status, 0) << convert.err;
  RunResult script = run(std::string(kDebianPerf) + " script " + kFields + " -i " + dir.file("offwake.data"));
  ASSERT_EQ(script.status, 0) << script.err;
  EXPECT_EQ(script.err, "");
  auto samples = parse_perf_script(script.out);
  add_block_counts(samples, dir.file("offwake.data"));
  expect_like_stock(samples, stock.truth[0], convert.err, stock);
}

TEST(DwarfUnwind, TracepointBackEndGivesTheStacksPerfUnwinds) {
  TempDir stock_dir, dir;
  Stock stock = stock_record(stock_dir);
  expect_stock_complete(stock);
  RecordRun r = record_and_script(dir, "--backend tracepoint --call-graph dwarf -- " + kPinned + kTarget, kFields);
  expect_clean(r);
  ASSERT_EQ(r.truth.size(), 1u) << r.record.out;
  expect_like_stock(r.samples, r.truth[0], r.record.err, stock);
}

// The BPF back end walks user stacks itself: a stack copy is the tracepoint back end's, or
// the --on-cpu samples' (OnCpu.DwarfCallGraphUnwindsOnCpuStacksToTheirRoot).
TEST(DwarfUnwind, CallGraphDwarfNeedsTheTracepointBackEndOrOnCpu) {
  for (std::string backend : {"", "--backend bpf ", "--backend auto "}) {
    RunResult r = run(kOffwake + " record " + backend + "--call-graph dwarf -o /dev/null -- true");
    EXPECT_EQ(r.status, 129) << backend;
    EXPECT_EQ(r.err,
              "perf offwake record: --call-graph dwarf needs --on-cpu (its samples' user stacks) or --backend "
              "tracepoint\n")
        << backend;
  }
  for (std::string bad : {"lbr", "dwarf,0", "dwarf,65536", "dwarf,x"}) {
    RunResult r = run(kOffwake + " record --backend tracepoint --call-graph " + bad + " -o /dev/null -- true");
    EXPECT_EQ(r.status, 129) << bad;
    EXPECT_NE(r.err.find("--call-graph"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace offwake::test
