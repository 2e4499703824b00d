// Complete user stacks for code without frame pointers (issue 23), end to end as root: the same
// run recorded by perf offwake record and by Debian's perf record --call-graph dwarf (side by
// side, support/side_by_side.h), both read with Debian's perf script. Our user stacks, blocked
// and waker, must equal frame by frame, by symbol, one that perf's DWARF unwinding gives for the
// same thread at a switch-out (the blocked thread) or a wakeup of that thread (the waker), and
// reach the thread's start (main, start_thread), for:
//   - our own workload built -O2 -fomit-frame-pointer (wl_nofp_chain): 99% of the blocked time,
//     a chain deeper than 64 frames, a handler blocked inside a signal handler, and the blocked
//     time of each thread within 5% of what it measured (counts exact);
//   - Debian's python3.11 in time.sleep, select.select and queue.get: 95%;
//   - Debian's nginx under wrk: 95% of its workers' off-CPU time.
// The frame-pointer walker gives one or two frames for such code: these tests fail with it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "support/blocked_samples.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/report_table.h"
#include "support/run.h"
#include "support/side_by_side.h"
#include "support/spawned.h"
#include "support/truth.h"
#include "support/user_stacks.h"
#include "unwind/readelf_frames.h"

namespace offwake::test {
namespace {

// Our own workload: of its blocked time, the share whose blocked and waker user stacks must equal
// perf's. perf and we take them at the same moments from the same registers and memory, and
// each thread repeats each stack COUNT times, so that perf has each one even if it loses an
// event; 1% leaves room for one odd block (e.g. a page fault of the first round).
constexpr double kOwnEqualShare = 0.99;
// Unmodified Debian software (python3.11, nginx): 95%, as issue 23 asks. Their threads block
// in more places than a workload of ours (the GIL, accept, a log write), some only once.
constexpr double kDebianEqualShare = 0.95;
// "Deep": more than this many user frames. perf's callchains and ours are cut at
// kernel.perf_event_max_stack (127 frames), so wl_nofp_chain's blocked thread is 80 deep.
constexpr size_t kDeepFrames = 64;

// The go signal of tests/workloads' -g: the workload waits for it once it said "ready".
constexpr int kReadyTimeoutMs = 30'000;
constexpr int kRunTimeoutMs = 60'000;

struct ReleasedRun {
  pid_t pid = 0;
  int status = -1;
  std::string out;
  std::vector<Truth> truth;
  SideBySideRecording rec;
  DwarfStacks perf;
};

// Starts `argv` (a workload that takes -g), attaches both recorders to it, releases it, waits
// for its end and stops them. perf record takes the switches and wakeups of threads named
// `comm`.
ReleasedRun record_released(const TempDir& dir, const std::vector<std::string>& argv, const std::string& comm) {
  ReleasedRun r;
  Spawned workload(argv, dir.file("workload.err"));
  r.pid = workload.pid();
  if (workload.wait_for_line("ready pid=", kReadyTimeoutMs).empty()) {
    ADD_FAILURE() << "the workload did not say ready: " << workload.out() << read_file(dir.file("workload.err"));
    return r;
  }
  SideBySideOptions o;
  o.pids = {workload.pid()};
  o.comm = comm;
  SideBySide recorders(dir, o);
  if (recorders.ready()) workload.signal(SIGUSR1);
  else workload.signal(SIGKILL);
  r.status = workload.wait(kRunTimeoutMs);
  r.out = workload.out();
  r.truth = parse_truth(r.out);
  r.rec = recorders.stop();
  r.perf = dwarf_stacks(r.rec.perfs);
  return r;
}

// Both recorders ended well, and perf script read both files.
void expect_recorded(const SideBySideRecording& rec) {
  EXPECT_EQ(rec.offwake_status, 0) << rec.offwake_err;
  EXPECT_NE(rec.offwake_err.find("Captured and wrote"), std::string::npos) << rec.offwake_err;
  EXPECT_EQ(rec.perf_status, 0) << rec.perf_err;
  EXPECT_EQ(rec.offwake_script.status, 0) << rec.offwake_script.err;
  EXPECT_EQ(rec.offwake_script.err, "");
  EXPECT_EQ(rec.perf_script.status, 0) << rec.perf_script.err.substr(0, 2000);
}

std::set<uint32_t> tids_of(const DwarfStacks& perf, pid_t pid) {
  std::set<uint32_t> out;
  for (const auto& [tid, p] : perf.process_of)
    if (p == static_cast<uint32_t>(pid)) out.insert(tid);
  return out;
}

// perf's own stacks are the reference only if they are complete: of the distinct blocked stacks
// of `tids`, at least `share` reach the thread's start (a stack deeper than perf's copy of the
// user stack would not). Those without user frames (a thread that blocks on its way out, its
// memory gone) are left out: no unwinder has anything to give there.
void expect_reference_complete(const DwarfStacks& perf, const std::set<uint32_t>& tids, double share) {
  size_t stacks = 0, complete = 0;
  std::string incomplete;
  for (uint32_t tid : tids) {
    auto it = perf.blocked.find(tid);
    if (it == perf.blocked.end()) continue;
    for (const UserStack& s : it->second) {
      if (s.empty()) continue;
      ++stacks;
      if (reaches_thread_start(s)) ++complete;
      else if (incomplete.size() < 4000) incomplete += "\n  " + std::to_string(tid) + ": " + describe(s);
    }
  }
  ASSERT_GT(stacks, 0u) << "perf recorded no switch-out of these threads";
  EXPECT_GE(static_cast<double>(complete), share * static_cast<double>(stacks))
      << complete << " of perf's " << stacks << " distinct blocked stacks reach the thread's start:" << incomplete;
}

// A timed function's recorded time against its truth: within 5%. A block whose switch-in the
// kernel did not trace (this VM runs no program for switches of its init process's threads)
// ends at its wakeup, without the run-queue wait that the workload's clock counts: if the
// recording counted such a block (its summary's "ended late"), the time may fall short by as
// many blocks as the truth allows (max_missed_ns), as in the other tests of the project; never more.
void expect_function_time(double recorded, uint64_t truth_ns, uint64_t truth_count, const std::string& record_err,
                          const std::string& what) {
  const double least = (1 - kBlockedTimeTolerance) * static_cast<double>(truth_ns);
  if (blocks_ended_late(record_err) == 0 || recorded >= least) {
    expect_within_5_percent(static_cast<uint64_t>(recorded), truth_ns, what);
    return;
  }
  EXPECT_GE(recorded, least - static_cast<double>(max_missed_ns(truth_ns, truth_count))) << what << "\n" << record_err;
}

// The blocked time and blocks of each thread of `pid` that printed a truth line, summed over its
// lines, against our offwake-time samples of that thread (all of them, whatever their stack):
// within 5% (kBlockedTimeTolerance), and as many blocks (at least as many where `exact_counts`
// is false). Blocks are counted from the samples' raw payloads (add_block_counts).
void expect_threads_within_truth(const ReleasedRun& r, bool exact_counts) {
  RunResult script = run(std::string(kDebianPerf) + " script " + kPerfScriptFields + " -i " + r.rec.offwake_data);
  ASSERT_EQ(script.status, 0) << script.err;
  std::vector<ScriptSample> samples = parse_perf_script(script.out);
  add_block_counts(samples, r.rec.offwake_data);
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> truth, recorded;  // tid -> ns, blocks
  std::map<uint32_t, std::string> functions;                            // tid -> its timed calls
  const std::set<uint32_t> ours = tids_of(r.perf, r.pid);
  for (const Truth& t : r.truth) {
    if (!ours.count(t.tid)) continue;  // another process's (a waker's)
    truth[t.tid].first += t.blocked_ns;
    truth[t.tid].second += t.count;
    functions[t.tid] += " " + t.function;
  }
  ASSERT_FALSE(truth.empty()) << r.out;
  for (const ScriptSample& s : samples) {
    if (s.event != "offwake-time") continue;
    recorded[s.tid].first += s.period;
    recorded[s.tid].second += blocks_of(s);
  }
  for (const auto& [tid, t] : truth) {
    const std::string figures = "thread " + std::to_string(tid) + " (" + functions[tid] + " ): recorded " +
                                std::to_string(recorded[tid].first) + " ns in " + std::to_string(recorded[tid].second) +
                                " blocks, timed " + std::to_string(t.first) + " ns in " + std::to_string(t.second);
    std::cout << figures << "\n";  // in the test's log, passed or failed
    expect_within_5_percent(recorded[tid].first, t.first, figures);
    if (exact_counts) EXPECT_EQ(recorded[tid].second, t.second) << "blocks of thread " << tid;
    else EXPECT_GE(recorded[tid].second, t.second) << "blocks of thread " << tid;
  }
}

const Truth* truth_of(const std::vector<Truth>& truth, const std::string& function) {
  for (const Truth& t : truth)
    if (t.function == function) return &t;
  return nullptr;
}

size_t index_of(const UserStack& s, const std::string& sym, size_t from = 0) {
  for (size_t i = from; i < s.size(); ++i)
    if (s[i].sym == sym) return i;
  return s.size();
}

// The comparison itself, on perf script text made for it: a stack equal frame by frame (an
// unnamed frame one byte off, a frame named differently at one byte off: the return address
// and the call), one cut short, one with an unnamed frame two bytes off, an interrupt waker, a
// waker perf did not see; perf's exit switch (Z) is no block.
TEST(CompleteStacks, ComparisonCountsEqualStacksByTime) {
  const std::string libc = "(/usr/lib/x86_64-linux-gnu/libc.so.6)";
  const std::string perf =
      "wl 100/101 sched:sched_switch: prev_comm=wl prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0\n"
      "\tffffffff81000130 entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])\n"
      "\t           f82ec read " + libc + "\n\t            1bbb [unknown] (/tmp/wl)\n"
      "\t            1d5b main (/tmp/wl)\n\t           27249 __libc_start_call_main " + libc + "\n\n"
      "wl 100/101 sched:sched_switch: prev_comm=wl prev_pid=101 prev_prio=120 prev_state=Z ==> next_comm=x next_pid=0\n"
      "\t           f82ec read " + libc + "\n\n"
      "wl 100/102 sched:sched_waking: comm=wl pid=101 prio=120 target_cpu=001\n"
      "\t           f838f __GI___libc_write " + libc + "\n\t            1fff last_calls_exit (/tmp/wl)\n"
      "\t            2a00 main (/tmp/wl)\n\n";
  const std::string ours =
      "wl 100/101 20000000 offwake-time: \n\tffffffff816e6623 anon_pipe_read ([kernel.kallsyms])\n"
      "\t           f82ec read " + libc + "\n\t            1bbc [unknown] (/tmp/wl)\n"
      "\t            1d5c main (/tmp/wl)\n\t           2724a __libc_start_call_main " + libc + "\n\n"
      "wl 100/102 20000000 offwake-waker: \n\t           f838f __GI___libc_write " + libc + "\n"
      "\t            2000 next_function (/tmp/wl)\n\t            2a01 main (/tmp/wl)\n\n"
      "wl 100/101 5000000 offwake-time: \n\t           f82ec read " + libc + "\n\n"
      "[hardirq] 2147483632/2147483632 5000000 offwake-waker: \n"
      "\tffffffff813b4b46 try_to_wake_up ([kernel.kallsyms])\n\n"
      "wl 100/101 1000000 offwake-time: \n\t           f82ec read " + libc + "\n\t            1bbe [unknown] (/tmp/wl)\n"
      "\t            1d5c main (/tmp/wl)\n\t           2724a __libc_start_call_main " + libc + "\n\n"
      "other 7/7 1000000 offwake-waker: \n\n";
  const DwarfStacks d = dwarf_stacks(parse_stack_samples(perf));
  EXPECT_EQ(d.switch_outs, 1u);
  EXPECT_EQ(d.wakeup_samples, 1u);
  const StackAgreement a = compare_stacks(parse_stack_samples(ours), d, {100});
  EXPECT_EQ(a.samples, 3u);
  EXPECT_EQ(a.blocked_ns, 26'000'000u);
  EXPECT_EQ(a.blocked_equal_ns, 20'000'000u) << a.summary();  // [unknown] 2 bytes off is another frame
  EXPECT_EQ(a.blocked_complete_ns, 20'000'000u);
  EXPECT_EQ(a.interrupt_waker_ns, 5'000'000u);
  EXPECT_EQ(a.unseen_waker_ns, 1'000'000u);  // "other": perf has no wakeup of 101 by 7
  EXPECT_EQ(a.thread_waker_ns, 20'000'000u);
  EXPECT_EQ(a.waker_equal_ns, 20'000'000u) << a.summary();
  EXPECT_EQ(a.waker_complete_ns, 20'000'000u);
}

// wl_nofp_chain, built -O2 -fomit-frame-pointer: its own functions never use rbp for the CFA
// (readelf's CFA column), so no frame-pointer walk can get past them.
TEST(CompleteStacks, OwnWorkloadHasNoFramePointers) {
  RunResult r = run("readelf --debug-dump=frames-interp " + kWorkloads + "wl_nofp_chain");
  ASSERT_EQ(r.status, 0) << r.err;
  size_t rows = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string loc, cfa;
    f >> loc >> cfa;
    if (loc.size() != 16 || loc.find_first_not_of("0123456789abcdef") != std::string::npos) continue;  // a row
    ++rows;
    EXPECT_NE(cfa.rfind("rbp", 0), 0u) << "CFA from rbp: " << line;
  }
  EXPECT_GT(rows, 50u) << r.out.substr(0, 2000);
  RunResult symbols = run("nm " + kWorkloads + "wl_nofp_chain");
  for (const char* f : {"nofp_chain_a", "nofp_chain_b", "nofp_chain_c", "nofp_on_signal", "nofp_handler_read"})
    EXPECT_NE(symbols.out.find(std::string(" T ") + f + "\n"), std::string::npos) << f << " is not one function";
}

// Every thread of wl_nofp_chain: blocked and waker user stacks equal perf's DWARF ones for 99%
// of the blocked time, reaching main or start_thread; the truth of each thread within 5%, and
// of each blocking function (which a complete stack names).
TEST(CompleteStacks, OwnWorkloadStacksEqualPerfDwarf) {
  TempDir dir;
  ReleasedRun r = record_released(dir, {kWorkloads + "wl_nofp_chain", "-n", "10", "-m", "10", "-g"}, "wl_nofp_chain");
  ASSERT_EQ(r.status, 0) << r.out;
  expect_recorded(r.rec);
  expect_reference_complete(r.perf, tids_of(r.perf, r.pid), 1.0);
  const StackAgreement a = compare_stacks(r.rec.ours, r.perf, {static_cast<uint32_t>(r.pid)});
  std::cout << a.summary();  // the figures, in the test's log
  record_agreement("own", a);
  EXPECT_GE(a.blocked_complete_share(), kOwnEqualShare) << a.summary() << r.rec.offwake_err;
  EXPECT_GT(a.thread_waker_ns, 0u) << a.summary();
  EXPECT_GE(a.waker_complete_share(), kOwnEqualShare) << a.summary();
  EXPECT_EQ(a.unseen_waker_ns, 0u) << "perf lost wakeups: " << a.summary() << r.rec.perf_err;
  // Per thread: its time within 5%, and at least its timed blocks. Exactly its timed blocks is
  // required per function below: a thread may also block where it times nothing (a page
  // fault in its 80-frame chain, seen once in a CI rehearsal: 31 blocks against 30), a real
  // block that belongs in the recording.
  expect_threads_within_truth(r, false);
  // Each truth line's own blocks, exactly: found by the function a complete stack names.
  RunResult script = run(std::string(kDebianPerf) + " script " + kPerfScriptFields + " -i " + r.rec.offwake_data);
  std::vector<ScriptSample> samples = parse_perf_script(script.out);
  add_block_counts(samples, r.rec.offwake_data);
  const std::set<uint32_t> ours = tids_of(r.perf, r.pid);
  for (const Truth& t : r.truth) {
    if (!ours.count(t.tid) || t.function == "nofp_idle_read") continue;  // the idle read's stack holds the handler's too
    SCOPED_TRACE(t.function);
    Blocked b = blocked_in(samples, t, blocks_without_waker(r.rec.offwake_err));
    EXPECT_TRUE(b.counted) << "a sample without its count of blocks";
    EXPECT_EQ(b.count, t.count) << "blocks recorded in " << t.function << " against the workload's count";
    expect_function_time(static_cast<double>(b.ns), t.blocked_ns, t.count, r.rec.offwake_err, t.function);
    if (t.waker_tid == 0) continue;  // the timer
    for (const ScriptSample* w : b.wakers)
      EXPECT_TRUE(w->tid == t.waker_tid && w->has_frame(t.waker_function)) << w->comm << " " << w->tid;
  }
}

// The blocked thread's stacks are more than 64 frames deep, all of them; the signalled thread's
// handler blocks have the signal frame in their stacks: read <- nofp_handler_read <-
// nofp_on_signal <- (the C library's signal trampoline) <- read <- nofp_idle_read <- ... <-
// start_thread, for the time the workload measured in its handler (within 5%), woken by the
// poker from nofp_handler_write.
TEST(CompleteStacks, OwnWorkloadDeepChainAndSignalHandler) {
  TempDir dir;
  ReleasedRun r = record_released(dir, {kWorkloads + "wl_nofp_chain", "-n", "10", "-m", "10", "-g"}, "wl_nofp_chain");
  ASSERT_EQ(r.status, 0) << r.out;
  expect_recorded(r.rec);
  const Truth* deep = truth_of(r.truth, "nofp_read");
  const Truth* handler = truth_of(r.truth, "nofp_handler_read");
  ASSERT_TRUE(deep && handler) << r.out;

  // perf's stacks of the blocked thread are deep: the reference holds.
  ASSERT_TRUE(r.perf.blocked.count(deep->tid));
  for (const UserStack& s : r.perf.blocked.at(deep->tid)) {
    EXPECT_GT(s.size(), kDeepFrames) << "perf: " << describe(s);
    EXPECT_TRUE(reaches_thread_start(s)) << "perf: " << describe(s);
  }
  uint64_t all_ns = 0, deep_ns = 0, handler_ns = 0, handler_waker_ns = 0;
  size_t shallowest = SIZE_MAX;
  std::string odd;
  for (size_t i = 0; i < r.rec.ours.size(); ++i) {
    const StackSample& s = r.rec.ours[i];
    if (s.event != "offwake-time") continue;
    if (s.tid == deep->tid) {
      all_ns += s.period;
      shallowest = std::min(shallowest, s.user.size());
      if (s.user.size() > kDeepFrames && among(s.user, r.perf.blocked.at(deep->tid))) deep_ns += s.period;
    }
    if (s.tid != handler->tid) continue;
    const size_t on_signal = index_of(s.user, "nofp_on_signal");
    const bool handler_path = index_of(s.user, "nofp_handler_read") < on_signal && on_signal + 2 < s.user.size() &&
                              s.user[on_signal + 1].dso.find("libc.so") != std::string::npos &&
                              s.user[on_signal + 2].sym == "read" &&
                              index_of(s.user, "nofp_idle_read", on_signal) < s.user.size() &&
                              index_of(s.user, "start_thread", on_signal) < s.user.size();
    if (!handler_path) {
      if (odd.size() < 4000) odd += "\n  " + std::to_string(s.period) + " ns: " + describe(s.user);
      continue;
    }
    handler_ns += s.period;
    if (i + 1 < r.rec.ours.size() && r.rec.ours[i + 1].tid == handler->waker_tid) {
      const UserStack& w = r.rec.ours[i + 1].user;
      if (index_of(w, handler->waker_function) < w.size() && reaches_thread_start(w)) handler_waker_ns += s.period;
    }
  }
  ASSERT_GT(all_ns, 0u) << "no blocked sample of the deep thread " << deep->tid;
  EXPECT_GE(static_cast<double>(deep_ns), kOwnEqualShare * static_cast<double>(all_ns))
      << deep_ns << " of " << all_ns << " ns in stacks deeper than " << kDeepFrames
      << " frames and equal to perf's; the shallowest has " << shallowest << " frames";
  expect_function_time(static_cast<double>(handler_ns), handler->blocked_ns, handler->count, r.rec.offwake_err,
                       "blocked in the signal handler, through the signal frame");
  EXPECT_GE(static_cast<double>(handler_waker_ns), kOwnEqualShare * static_cast<double>(handler_ns))
      << "handler blocks whose waker stack names " << handler->waker_function << " and reaches start_thread";
  ::testing::Test::RecordProperty("shallowest_deep_stack", static_cast<int>(shallowest));
  if (handler_ns < handler->blocked_ns / 2) ADD_FAILURE() << "the signalled thread's other stacks:" << odd;
}

// perf offwake report --folded shows the complete stacks: main, in the main thread's.
TEST(CompleteStacks, OwnWorkloadFoldedReportReachesMain) {
  TempDir dir;
  RunResult rec = run(kOffwake + " record --backend bpf -q -o " + dir.file("perf.data") + " -- " + kWorkloads +
                      "wl_nofp_chain -n 5 -m 10");
  ASSERT_EQ(rec.status, 0) << rec.err;
  RunResult folded = run(kOffwake + " report --folded -i " + dir.file("perf.data"));
  ASSERT_EQ(folded.status, 0) << folded.err;
  EXPECT_NE(folded.out.find(";main;"), std::string::npos) << folded.out;
}

// The user frames of a sample, leaf first, as the comparisons above hold them.
UserStack user_stack(const ScriptSample& s) {
  UserStack out;
  for (const ScriptFrame& f : s.frames)
    if (!f.kernel()) out.push_back({f.ip, f.sym, ""});
  return out;
}

// Whether `stack` holds frames named `chain` (leaf first), one after the other.
bool holds_chain(const UserStack& stack, const std::vector<std::string>& chain) {
  return std::search(stack.begin(), stack.end(), chain.begin(), chain.end(),
                     [](const StackFrame& f, const std::string& sym) { return f.sym == sym; }) != stack.end();
}

// A user stack's frames, named `chain` one after the other and ending at `last` ("": anywhere).
struct WholeStack {
  std::vector<std::string> chain;
  std::string last;
  bool of(const UserStack& s) const {
    return holds_chain(s, chain) && (last.empty() || (!s.empty() && s.back().sym == last));
  }
};

// A recording of one of our workloads whose truth thread blocks in one function: clean, its
// blocks counted exactly and their time within 5% (expect_function_time), and all of that time
// with the blocked user stack `blocked` and, for each block whose waker was seen, the truth's
// waker with the user stack `waker`.
void expect_whole_stacks(const RecordRun& r, const WholeStack& blocked, const WholeStack& waker) {
  expect_clean(r);
  ASSERT_EQ(r.truth.size(), 1u) << r.record.out;
  const Truth& t = r.truth[0];
  Blocked b = blocked_in(r.samples, t, blocks_without_waker(r.record.err));
  EXPECT_TRUE(b.counted) << "a sample without its count of blocks";
  EXPECT_EQ(b.count, t.count) << "blocks recorded in " << t.function << " against the workload's count\n"
                              << r.record.err << r.script.out.substr(0, 3000);
  expect_function_time(static_cast<double>(b.ns), t.blocked_ns, t.count, r.record.err, t.function);
  uint64_t whole_ns = 0, waker_whole_ns = 0;
  std::string odd;
  for (const ScriptSample* s : b.blocked) {
    const UserStack stack = user_stack(*s);
    if (blocked.of(stack)) whole_ns += s->period;
    else odd += "\n  blocked: " + describe(stack);
  }
  for (const ScriptSample* w : b.wakers) {
    const UserStack stack = user_stack(*w);
    if (w->tid == t.waker_tid && waker.of(stack)) waker_whole_ns += w->period;
    else odd += "\n  waker " + std::to_string(w->tid) + ": " + describe(stack);
  }
  EXPECT_EQ(whole_ns, b.ns) << odd << "\n" << r.record.err;
  EXPECT_EQ(waker_whole_ns, b.ns - b.unseen_ns) << odd;
}

// wl_no_cfi: two functions with frame pointers and no unwind information at all, one in the
// blocked thread's stack and one in the waker's, between functions built without frame
// pointers and with CFI. A walk by the tables finds no row for their pcs and goes on by their
// frame pointer, as libdw's unwinder does: complete stacks through them, blocked and waker, with
// the blocked thread's time within 5% of what it measured and its blocks counted exactly. The
// same from the walk at switch-out, from the one deferred to the way back to user space
// (--min-block), and from the tracepoint back end's stack copies unwound by libdw. Before the
// walker took that way, its stacks ended at nocfi_middle ("no unwind row").
TEST(CompleteStacks, CodeWithoutUnwindRowsIsWalkedByItsFramePointer) {
  const std::string binary = kWorkloads + "wl_no_cfi";
  RunResult nm = run("nm " + binary);
  ASSERT_EQ(nm.status, 0) << nm.err;
  std::string error;
  const std::vector<ReadelfFde> fdes = readelf_frames(binary, &error);  // .eh_frame's and .debug_frame's
  ASSERT_GT(fdes.size(), 5u) << error;
  auto covered = [&](const std::string& function) {
    const size_t at = nm.out.find(" T " + function + "\n");
    EXPECT_NE(at, std::string::npos) << function << " is not one function";
    if (at == std::string::npos) return false;
    const uint64_t addr = std::stoull(nm.out.substr(nm.out.rfind('\n', at) + 1, 16), nullptr, 16);
    return std::any_of(fdes.begin(), fdes.end(), [&](const ReadelfFde& f) { return addr >= f.start && addr < f.end; });
  };
  EXPECT_FALSE(covered("nocfi_middle"));
  EXPECT_FALSE(covered("nocfi_poke_middle"));
  EXPECT_TRUE(covered("nocfi_wait"));
  EXPECT_TRUE(covered("nocfi_waker"));

  const WholeStack blocked = {{"nocfi_wait", "nocfi_middle", "nocfi_outer", "main"}, ""};
  const WholeStack waker = {{"nocfi_poke", "nocfi_poke_middle", "nocfi_waker", "start_thread"}, ""};
  for (const char* mode : {"--backend bpf", "--backend bpf --min-block 1000", "--backend tracepoint --call-graph dwarf"}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    expect_whole_stacks(record_and_script(dir, std::string(mode) + " -- " + binary + " -n 10 -m 10"), blocked, waker);
  }
}

// A process that execs (here one a shell starts) has no unwind tables until its exec's MMAP2
// records are read and its new binary's table is built, a few milliseconds: its first blocks
// came then, a thread waiting for another it had just started, and were walked by frame
// pointers, cut short in Debian's libc (wl_wait_for_signal, main, __libc_start_call_main: 50
// ms of the 150 off the thread's whole stack, in every run here). Now their user stacks wait
// for the tables on the way back to user space: every block of the waiter reaches _start and
// every one of its waker start_thread's caller, clone3, its time within 5% of what it
// measured and its blocks counted exactly. Recording the command, and system-wide (-a, where
// the same cut was in every run too).
TEST(CompleteStacks, ANewProcessHasItsFirstBlocksWhole) {
  for (const std::string target : {"", "-a "}) {
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE(target + "round " + std::to_string(round));
      TempDir dir;
      expect_whole_stacks(record_and_script(dir, target + "-- sh -c '" + kWorkloads + "wl_condvar -n 3 -m 50; true'"),
                          {{"wl_wait_for_signal", "main"}, "_start"},
                          {{"wl_send_signal", "signaller", "start_thread"}, "clone3"});
    }
  }
}

// One table a binary, however its processes name it: the command's files are prepared before
// its exec by the names it asks for (/usr/bin/sh, /lib64/ld-linux-x86-64.so.2,
// /lib/x86_64-linux-gnu/libc.so.6) and mapped under the names the kernel gives (/usr/bin/dash,
// /usr/lib/...); keyed by those, dash, the dynamic loader and libc were built twice or three
// times (8 tables for 4 binaries), and the shell's child waited for libc's second build. The
// tables stored equal the binaries the recorded processes mapped for code, by build id, as
// Debian's perf reads the MMAP2 records of the file.
TEST(CompleteStacks, EachBinaryMappedHasOneTable) {
  TempDir dir;
  const std::string data = dir.file("perf.data");
  auto r = run(kOffwake + " record -o " + data + " -- sh -c '" + kWorkloads + "wl_condvar -n 1 -m 10; true'");
  ASSERT_EQ(r.status, 0) << r.err;
  const size_t at = r.err.find("unwind tables: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const size_t tables = std::stoul(r.err.substr(at + 15));
  auto mmaps = run(std::string(kDebianPerf) + " script --show-mmap-events -F comm -i " + data);
  ASSERT_EQ(mmaps.status, 0) << mmaps.err;
  std::set<std::string> binaries;
  std::istringstream lines(mmaps.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t bid = line.find(" <"), code = line.find("]: r-xp /");
    // The recorder's own mappings, inherited by the command until its exec, are not the command's.
    if (line.find("PERF_RECORD_MMAP2") == std::string::npos || line.find("perf-offwake") != std::string::npos ||
        bid == std::string::npos || code == std::string::npos)
      continue;
    binaries.insert(line.substr(bid + 2, line.find('>', bid) - bid - 2));
  }
  EXPECT_EQ(binaries.size(), 4u) << "dash, its dynamic loader, libc and wl_condvar:\n" << mmaps.out;
  EXPECT_EQ(tables, binaries.size()) << r.err;
}

// index_of() for a frame whose name contains `part` (a JIT frame's name holds its source too).
size_t index_containing(const UserStack& s, const std::string& part, size_t from = 0) {
  for (size_t i = from; i < s.size(); ++i)
    if (s[i].sym.find(part) != std::string::npos) return i;
  return s.size();
}

// Node.js: V8's builtins have no CFI and its interpreter's frames lie in no binary; both keep
// frame pointers. The main thread's waits in Atomics.wait() (wl_node_atomics.js, timed by the
// script) have complete stacks: the wait's C++ (with CFI), the builtin that called it (no row),
// the script's functions offwakeWait and offwakeOuter (named from node's /tmp/perf-PID.map by
// Debian's perf script), V8's C++ again, down to the C library's start; their time within 5% of
// the script's, and as many blocks as waits. Before the walker went on by frame pointer where a
// pc has no row, every such stack ended at Builtins_CEntry_Return1_ArgvOnStack_BuiltinExit.
TEST(CompleteStacks, NodeStacksGoThroughV8BuiltinsToTheScriptsFunctions) {
  const std::string node = "/usr/bin/node";
  ASSERT_EQ(access(node.c_str(), X_OK), 0) << node << " missing: scripts/install-deps.sh installs it";
  TempDir dir;
  // --perf-basic-prof writes a log of V8's too, into the current directory unless told.
  RecordRun r = record_and_script(dir, "--backend bpf -- " + node + " --perf-basic-prof --interpreted-frames-native-stack" +
                                           " --no-logfile-per-isolate --logfile=" + dir.file("v8.log") + " " +
                                           OFFWAKE_SOURCE_DIR + "/tests/workloads/wl_node_atomics.js -n 30 -m 5");
  ASSERT_EQ(r.truth.size(), 1u) << r.record.out << r.record.err;
  const Truth& t = r.truth[0];
  std::remove(("/tmp/perf-" + std::to_string(t.tid) + ".map").c_str());  // node leaves it
  expect_clean(r);
  uint64_t ns = 0, blocks = 0, complete_ns = 0;
  std::string odd;
  for (const ScriptSample& s : r.samples) {
    if (s.event != "offwake-time" || s.tid != t.tid || !s.has_frame(t.function)) continue;
    const UserStack stack = user_stack(s);
    const size_t wait = index_of(stack, t.function), own = index_containing(stack, "offwakeWait", wait),
                 caller = index_containing(stack, "offwakeOuter", own), start = index_of(stack, "node::Start", caller);
    // The wait before offwakeOuter's, not counted; or a stack that ends before the script's frames.
    if (caller == stack.size()) {
      if (odd.size() < 4000) odd += "\n  " + std::to_string(s.period) + " ns: " + describe(stack);
      continue;
    }
    ns += s.period;
    blocks += blocks_of(s);
    if (start < stack.size() && index_of(stack, "__libc_start_call_main", start) < stack.size()) complete_ns += s.period;
    else if (odd.size() < 4000) odd += "\n  " + describe(stack);
  }
  expect_function_time(static_cast<double>(ns), t.blocked_ns, t.count, r.record.err, t.function + odd);
  EXPECT_EQ(blocks, t.count) << "blocks in " << t.function << " under offwakeOuter against the script's waits" << odd;
  EXPECT_EQ(complete_ns, ns) << "stacks that do not go from the wait through offwakeWait and offwakeOuter to the C "
                                "library's start:"
                             << odd << "\n" << r.record.err;
}

// The lazy capture (--min-block: user stacks walked on the way back to user space, by a task
// work or at switch-in from a thread of the same process) walks with the tables as the eager
// one does at switch-out: for each of the workload's timed functions, the same set of complete
// blocked and waker stacks, and the truth's time within 5%, in two runs of the same workload.
TEST(CompleteStacks, LazyAndEagerTakeTheSameCompleteStacks) {
  std::map<std::string, std::set<std::string>> stacks[2];  // function -> folded lines, no time
  for (int eager = 0; eager < 2; ++eager) {
    SCOPED_TRACE(eager ? "eager" : "lazy");
    TempDir dir;
    RunResult rec = run(kOffwake + " record --backend bpf --min-block 1000" + (eager ? " --eager" : "") + " -o " +
                        dir.file("perf.data") + " -- " + kWorkloads + "wl_nofp_chain -n 5 -m 10");
    ASSERT_EQ(rec.status, 0) << rec.err;
    const std::vector<Truth> truth = parse_truth(rec.out + rec.err);
    ASSERT_FALSE(truth.empty()) << rec.out << rec.err;
    // User frames only: a block whose switch-in the kernel did not trace has no kernel stack
    // (counted as ended late), in either run.
    RunResult folded = run(kOffwake + " report --folded --user-only -i " + dir.file("perf.data"));
    ASSERT_EQ(folded.status, 0) << folded.err;
    // Per timed function (several threads pause in nofp_pause): its truth, and the blocks whose
    // leaf-most workload frame it is (the handler's blocks also hold the nofp_idle_read below
    // the signal frame).
    std::map<std::string, uint64_t> truth_ns;
    std::map<std::string, uint64_t> truth_count;
    for (const Truth& t : truth) {
      truth_ns[t.function] += t.blocked_ns;
      truth_count[t.function] += t.count;
    }
    std::map<std::string, double> recorded_ns;
    std::istringstream in(folded.out);
    for (std::string line; std::getline(in, line);) {
      const size_t space = line.rfind(' ');
      const std::string blocked = line.substr(0, line.find(";--;"));
      const size_t at = blocked.rfind(";nofp_");
      if (at == std::string::npos) continue;
      const std::string function = blocked.substr(at + 1, blocked.find(';', at + 1) - at - 1);
      if (!truth_ns.count(function)) continue;
      // The blocked stack, and the waker's where one was recorded with frames: a block may
      // end with no recorded waker in either run ("[no_waker_seen]": the wakeup raced the
      // block's start, counted as missed), which says nothing about how stacks are walked.
      stacks[eager][function].insert(blocked);
      const size_t dashes = line.find(";--;");
      const std::string waker = dashes == std::string::npos ? "" : line.substr(dashes + 4, space - dashes - 4);
      if (waker.find(';') != std::string::npos) stacks[eager][function].insert("waker: " + waker);
      recorded_ns[function] += std::stod(line.substr(space + 1));
    }
    for (const auto& [function, ns] : truth_ns)
      expect_function_time(recorded_ns[function], ns, truth_count[function], rec.err,
                           function + (eager ? " (eager)" : " (lazy)"));
  }
  ASSERT_FALSE(stacks[0].empty());
  for (const auto& [function, lines] : stacks[0]) {
    SCOPED_TRACE(function);
    for (const std::string& l : lines)
      EXPECT_TRUE(stacks[1][function].count(l)) << "lazy only: " << l;
    for (const std::string& l : stacks[1][function])
      EXPECT_TRUE(lines.count(l)) << "eager only: " << l;
    for (const std::string& l : lines) {  // blocked stacks reach the thread's start
      if (!l.starts_with("waker: ")) {
        EXPECT_TRUE(l.find(";main;") != std::string::npos || l.find(";start_thread;") != std::string::npos) << l;
      }
    }
  }
}

// Debian's python3.11 (no frame pointers) in time.sleep, select.select and queue.get, woken by the
// timer, by os.write from another thread and by queue.put from another thread: 95% of the
// process's off-CPU time has blocked and waker user stacks equal to perf's DWARF ones, down to
// the interpreter's main (Py_BytesMain, __libc_start_call_main) or start_thread. Each thread's
// blocked time within 5% of what it timed. The interpreter runs SCHED_FIFO (chrt -f 1), so that no
// other task (the two recorders, a build beside the tests) preempts it: a thread's clock counts
// the time it waits, preempted, to run again, which is no block. Without: under two busy loops of
// nice 19, a producer thread's loop took 6% more than it blocked, in 4 runs of 40. With: recorded over
// timed 0.997 to 1.006 for every thread of 50 runs, idle and under four busy loops of nice 0.
TEST(CompleteStacks, Python311StacksEqualPerfDwarf) {
  const std::string python = "/usr/bin/python3.11";  // Debian's; `python3` may be another one
  ASSERT_EQ(access(python.c_str(), X_OK), 0) << python << " missing: scripts/install-deps.sh installs it";
  TempDir dir;
  ReleasedRun r = record_released(
      dir,
      {"chrt", "-f", "1", python, std::string(OFFWAKE_SOURCE_DIR) + "/tests/workloads/wl_py_blocking.py", "-n", "10",
       "-m", "20", "-g", "--prefault"},
      "python3.11");
  ASSERT_EQ(r.status, 0) << r.out << read_file(dir.file("workload.err"));
  expect_recorded(r.rec);
  expect_reference_complete(r.perf, tids_of(r.perf, r.pid), kDebianEqualShare);
  const StackAgreement a = compare_stacks(r.rec.ours, r.perf, {static_cast<uint32_t>(r.pid)});
  std::cout << a.summary();  // the figures, in the test's log
  record_agreement("python", a);
  EXPECT_GE(a.blocked_complete_share(), kDebianEqualShare) << a.summary() << r.rec.offwake_err;
  EXPECT_GT(a.thread_waker_ns, 0u) << a.summary();
  EXPECT_GE(a.waker_complete_share(), kDebianEqualShare) << a.summary();
  // Each thread's loop of calls timed by the script, without a gap; the GIL adds blocks, within it.
  expect_threads_within_truth(r, false);
}

// The python3.11 of the two tests below: it prints its pid, then sleeps 300 times 2 ms.
const std::string kPythonSleeps =
    "import os, time\nprint(os.getpid(), flush=True)\nfor i in range(300): time.sleep(0.002)";

// Its sleeps in the recording at `data`, and how many have the whole stack, down to
// Py_BytesMain; `pid` is the first line the recording's command printed. Each within the
// truth's 300 (at most max_missed_blocks of them missing).
struct PythonSleeps {
  uint64_t sleeps = 0, whole = 0;
  std::string report;
};
PythonSleeps python_sleeps(const std::string& data, const std::string& out) {
  PythonSleeps p;
  const std::string pid = out.substr(0, out.find('\n'));
  auto report = run(kOffwake + " report --stdio --no-waker --pid " + pid + " -i " + data);
  EXPECT_EQ(report.status, 0) << report.err;
  auto naming = [](const char* a, const char* b) {
    return [a, b](const std::string& l) { return l.find(a) != std::string::npos && l.find(b) != std::string::npos; };
  };
  p.sleeps = rows_count(report.out, naming("hrtimer_nanosleep", "hrtimer_nanosleep"));
  p.whole = rows_count(report.out, naming("hrtimer_nanosleep", "Py_BytesMain"));
  p.report = report.out;
  std::cout << p.sleeps << " sleeps, " << p.whole << " with the whole stack\n";
  EXPECT_GE(p.sleeps, 300 - max_missed_blocks(300)) << report.out;
  EXPECT_LE(p.sleeps, 300u) << report.out;
  return p;
}

// A process that starts during a system-wide recording gets its unwind tables from its MMAP2
// records, read every 10 ms: Debian's python3.11 (no frame pointers), started once the
// recorder is attached, sleeps 300 times 2 ms, and at least 90% of those blocks have the whole
// stack, down to Py_BytesMain. Read every 100 ms, 84% did (the first 45 to 50 cut after a
// frame, walked by frame pointers).
TEST(CompleteStacks, AProcessStartedDuringARecordingSoonHasTables) {
  const std::string python = "/usr/bin/python3.11";
  ASSERT_EQ(access(python.c_str(), X_OK), 0) << python << " missing: scripts/install-deps.sh installs it";
  TempDir dir;
  const std::string data = dir.file("perf.data");
  auto r = run(kOffwake + " record -a -q -o " + data + " & p=$!; " +
               "for i in $(seq 600); do ls -l /proc/$p/fd 2>/dev/null | grep -q 'anon_inode:bpf_link' && break; "
               "sleep 0.1; done; sleep 0.5; " +
               python + " -c '" + kPythonSleeps + "'; s=$?; kill -INT $p; wait $p; exit $s");
  ASSERT_EQ(r.status, 0) << r.err;
  const PythonSleeps p = python_sleeps(data, r.out);
  EXPECT_GE(p.whole * 10, 300u * 9) << p.report;
}

// A process started beside a big one is not held up behind the big one's table: node (2.7 MB of
// .eh_frame, 150 ms to build) and Debian's python3.11, started at once by a shell during a
// system-wide recording, python sleeping 300 times 2 ms. At least 85% of its sleeps have the
// whole stack down to Py_BytesMain: 280 to 300 in 12 runs here (python waits for its own
// tables, 20 to 40 ms). With node's table built on the recorder's thread first, 212 to 217
// (python's first 170 to 190 ms of sleeps ended in the C library).
TEST(CompleteStacks, AProcessStartedBesideABigOneIsNotHeldUpByItsTable) {
  const std::string python = "/usr/bin/python3.11";
  ASSERT_EQ(access(python.c_str(), X_OK), 0) << python << " missing: scripts/install-deps.sh installs it";
  ASSERT_EQ(access("/usr/bin/node", X_OK), 0) << "node missing: scripts/install-deps.sh --tests installs it";
  TempDir dir;
  const std::string data = dir.file("perf.data");
  auto r = run(kOffwake + " record -a -o " + data + " -- sh -c '/usr/bin/node -e \"setTimeout(() => {}, 900)\" & " +
               python + " -c \"" + kPythonSleeps + "\"; wait'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("built beside the recording"), std::string::npos) << r.err;
  const PythonSleeps p = python_sleeps(data, r.out);
  EXPECT_GE(p.whole * 100, 300u * 85) << p.report << r.err;
}

// A command that blocks a moment after its exec, before its process has unwind tables
// (coreutils' sleep, started during a system-wide recording), is walked by frame pointers, which
// Debian's libc has none of: its stack ends at a return address that follows no call, rather
// than give a word of the stack for a caller (its timespec's nanoseconds, 0x11e1a300 for 0.3 s,
// in no mapping: perf's "[unknown]"). Every user frame of its blocks is in a file.
TEST(CompleteStacks, AProcessWithoutTablesYetGetsNoWordOfDataForACaller) {
  TempDir dir;
  const std::string data = dir.file("perf.data");
  auto r = run(kOffwake + " record -a -q -o " + data + " & p=$!; " +
               "for i in $(seq 600); do ls -l /proc/$p/fd 2>/dev/null | grep -q 'anon_inode:bpf_link' && break; "
               "sleep 0.1; done; sleep 0.5; for t in 0.3 0.2 0.1; do /usr/bin/sleep $t; done; kill -INT $p; wait $p");
  ASSERT_EQ(r.status, 0) << r.err;
  auto script = run(std::string(kDebianPerf) + " script -F comm,event,ip,dso --comm sleep -i " + data);
  ASSERT_EQ(script.status, 0) << script.err;
  size_t blocks = 0, frames = 0;
  bool in_block = false;
  std::istringstream lines(script.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("offwake-") != std::string::npos) {
      in_block = line.find("offwake-time") != std::string::npos;
      blocks += in_block;
      continue;
    }
    std::istringstream f(line);
    std::string ip;
    if (!in_block || !(f >> ip) || ip.size() >= 16) continue;  // kernel frames: 16 hex digits
    ++frames;
    EXPECT_EQ(line.find("([unknown])"), std::string::npos) << line << "\n" << script.out;
  }
  EXPECT_GE(blocks, 3u) << script.out;
  EXPECT_GE(frames, blocks) << script.out;
}

// Debian's python3.11 starts a program (subprocess.run) with vfork(): glibc's vfork pops its
// return address into rdi before the system call, and the parent blocks there until the child
// has exec'd (a millisecond or two a run). The script's 20 runs are 20 blocks there, each with
// the whole stack through the interpreter down to _start; the walk ended at __vfork before
// ("unsupported rule"). Exactly and with the walk deferred to the way back to user space.
TEST(CompleteStacks, APythonBlockedInVforkHasItsWholeStack) {
  const std::string python = "/usr/bin/python3.11";
  ASSERT_EQ(access(python.c_str(), X_OK), 0) << python << " missing: scripts/install-deps.sh installs it";
  const WholeStack whole = {{"__vfork"}, "_start"};
  for (const char* mode : {"", "--min-block 10"}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    RecordRun r = record_and_script(dir, std::string(mode) + " -- " + python +
                                             " -c 'import subprocess\nfor _ in range(20): subprocess.run([\"true\"])'");
    expect_clean(r);
    uint64_t blocks = 0, whole_blocks = 0;
    std::string odd;
    for (const ScriptSample& s : r.samples) {
      if (s.event != "offwake-time" || s.comm != "python3.11" || !s.has_frame("__x64_sys_vfork")) continue;
      blocks += blocks_of(s);
      const UserStack stack = user_stack(s);
      if (whole.of(stack) && holds_chain(stack, {"Py_BytesMain"})) whole_blocks += blocks_of(s);
      else odd += "\n  " + describe(stack);
    }
    EXPECT_EQ(blocks, 20u) << r.record.err;
    EXPECT_EQ(whole_blocks, blocks) << odd << "\n" << r.record.err;
  }
}

// A free TCP port on 127.0.0.1 (the kernel's pick, released for nginx to take).
int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (s >= 0 && bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (s >= 0) close(s);
  return port;
}

// nginx's configuration for the test: its own directory for everything it writes, a local port.
std::string nginx_conf(const TempDir& dir, int port) {
  const std::string d = dir.path();
  return "user root;\nworker_processes 2;\ndaemon off;\nmaster_process on;\npid " + d + "/nginx.pid;\nerror_log " + d +
         "/error.log;\nevents { worker_connections 64; }\nhttp {\n  access_log " + d + "/access.log;\n" +
         "  client_body_temp_path " + d + "/body;\n  proxy_temp_path " + d + "/proxy;\n  fastcgi_temp_path " + d +
         "/fastcgi;\n  uwsgi_temp_path " + d + "/uwsgi;\n  scgi_temp_path " + d + "/scgi;\n" +
         "  server { listen 127.0.0.1:" + std::to_string(port) + "; root " + d + "/www; }\n}\n";
}

// nginx's workers once each sleeps in epoll_wait (its event loop), as /proc says; empty if they
// are not there within the time.
std::vector<pid_t> nginx_workers(pid_t master, size_t expected) {
  for (int waited = 0; waited < kReadyTimeoutMs; waited += 10) {
    std::vector<pid_t> workers;
    std::istringstream children(read_file("/proc/" + std::to_string(master) + "/task/" + std::to_string(master) +
                                          "/children"));
    for (pid_t p; children >> p;) {
      const std::string proc = "/proc/" + std::to_string(p);
      if (read_file(proc + "/cmdline").rfind("nginx: worker process", 0) == 0 &&
          read_file(proc + "/syscall").rfind("232 ", 0) == 0)  // epoll_wait
        workers.push_back(p);
    }
    if (workers.size() == expected) return workers;
    usleep(10'000);
  }
  return {};
}

// Debian's nginx (no frame pointers), two workers, under wrk for 3 seconds: 95% of the workers'
// off-CPU time has user stacks equal to perf's DWARF ones, down to main. Their wakeups come from
// the network's softirq, which over loopback the sending wrk thread runs itself: the waker is
// that thread (offwake_softirq_is_tasks), whose user stacks must be complete too: wrk is
// Debian's, without frame pointers, and outside the recorded processes, so its tables come on
// request (UserUnwind::serve_requests): the walks before then (its first milliseconds) are not.
// perf now and then unwinds none of wrk's stacks beyond libc's first frame: its unwinder finds
// no FDE for any sample of that process, though the samples' stack copies are whole (perf's
// processing, per process and timing-dependent: with curl as the waker perf alone truncated 107
// of 150 processes). There ours must reach the thread's start by itself. Other wakeups are
// interrupts' (connections, timers),
// and a worker that got no connection is still blocked at the end.
TEST(CompleteStacks, NginxUnderWrkStacksEqualPerfDwarf) {
  for (const char* tool : {"/usr/sbin/nginx", "/usr/bin/wrk"})
    ASSERT_EQ(access(tool, X_OK), 0) << tool << " missing: scripts/install-deps.sh --tests installs it";
  TempDir dir;
  const int port = free_port();
  ASSERT_GT(port, 0);
  run("mkdir -p " + dir.file("www") + " && echo hello > " + dir.file("www/index.html"));
  std::ofstream(dir.file("nginx.conf")) << nginx_conf(dir, port);
  // wrk paced (its delay() hook: 5 ms between a connection's requests, about 600 requests a
  // second): perf copies 16 KB of stack at each event, so unpaced (40,000 a second) it would
  // write gigabytes.
  std::ofstream(dir.file("pace.lua")) << "function delay() return 5 end\n";
  Spawned nginx({"/usr/sbin/nginx", "-c", dir.file("nginx.conf"), "-p", dir.path(), "-e", dir.file("error.log")},
                dir.file("nginx.err"));
  const std::vector<pid_t> workers = nginx_workers(nginx.pid(), 2);
  ASSERT_EQ(workers.size(), 2u) << read_file(dir.file("error.log")) << read_file(dir.file("nginx.err"));
  SideBySideOptions o;
  o.pids = workers;
  o.comm = "nginx";
  o.dwarf_stack_bytes = 16384;  // nginx's deepest stacks here are a few KB
  SideBySide recorders(dir, o);
  ASSERT_TRUE(recorders.ready());
  RunResult wrk = run("wrk -t 1 -c 4 -d 3s -s " + dir.file("pace.lua") + " http://127.0.0.1:" + std::to_string(port) +
                      "/index.html");
  SideBySideRecording rec = recorders.stop();
  nginx.signal(SIGTERM);
  EXPECT_EQ(nginx.wait(kRunTimeoutMs), 0) << read_file(dir.file("error.log"));
  ASSERT_EQ(wrk.status, 0) << wrk.err;
  EXPECT_NE(wrk.out.find(" requests in "), std::string::npos) << wrk.out;
  EXPECT_EQ(wrk.out.find("Non-2xx"), std::string::npos) << wrk.out;
  EXPECT_EQ(wrk.out.find("Socket errors"), std::string::npos) << wrk.out;
  expect_recorded(rec);
  const DwarfStacks perf = dwarf_stacks(rec.perfs);
  std::set<uint32_t> pids, tids;
  for (pid_t w : workers) pids.insert(static_cast<uint32_t>(w)), tids.insert(static_cast<uint32_t>(w));
  expect_reference_complete(perf, tids, kDebianEqualShare);
  const StackAgreement a = compare_stacks(rec.ours, perf, pids);
  std::cout << a.summary();  // the figures, in the test's log
  record_agreement("nginx", a);
  ASSERT_GT(a.samples, 0u) << rec.offwake_script.out.substr(0, 2000);
  EXPECT_GE(a.blocked_complete_share(), kDebianEqualShare) << a.summary() << rec.offwake_err;
  // A good part of the workers' off-CPU time ends in wrk's sends, woken by a wrk thread.
  EXPECT_GE(a.thread_waker_ns, a.blocked_ns / 4) << a.summary();
  EXPECT_GE(a.waker_complete_share_beyond_perf(), kDebianEqualShare) << a.summary();
  ::testing::Test::RecordProperty("nginx_interrupt_waker_ns", std::to_string(a.interrupt_waker_ns));
}

}  // namespace
}  // namespace offwake::test
