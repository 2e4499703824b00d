// End to end, as root: each sample names its thread as it was when it blocked or woke: its
// comm, and the binary that ran (so its symbols), not as it was at the end of the recording
// (issue 9, item 1). Each workload changes a thread's identity in one way: prctl(PR_SET_NAME);
// exec into another non-PIE binary laid over the same addresses; exec into a binary with the
// same comm and the same code (only an exec generation tells the blocks apart); pid reuse
// (clone3 set_tid), for blocked threads and wakers; and a thread that exits long before the end.
// Each is recorded aggregated and with --timeline, and read by two perf versions. Debian's perf
// 6.1 resolves a sample with the thread's comm and maps as of the sample's time; perf 6.12
// (scripts/build-perf612.sh) also forgets a thread at its EXIT: a later sample shows the comm
// ":TID" and [unknown] frames.
//
// What is checked, per reader, for every block the workload reports:
//   - the samples whose user leaf is the named function add up to the workload's own measure
//     within 5%, the tolerance of the other end-to-end tests (see kBlocks), plus the length of
//     the thread's blocks that the recording itself flags as ended without a waker (see
//     waker_unseen);
//   - each carries the comm the thread had, no [unknown] user frame, and a timestamp inside
//     the interval the workload says the thread had that identity ("identity" lines);
//   - each waker sample does the same for the waker. The wakers of wl_pid_reuse and wl_exited
//     always exit before the thread they woke runs again (SCHED_FIFO on one CPU), so a waker
//     sample stamped with the end of the block, rather than with the wakeup, fails every time;
//   - no sample shows the padding function that the other binary lays over the first one's
//     code (it never runs, so a frame naming it was symbolized in the wrong binary).
#include <unistd.h>

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "support/blocked_samples.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "support/tolerances.h"
#include "support/truth.h"

namespace offwake::test {
namespace {

// Twenty blocks of 20 ms per identity: 400 ms, so that one hiccup of a few milliseconds that the
// workload's clock sees and the recorder rightly does not (a preemption between the clock
// reading and the syscall, measured here at up to 5 ms) stays near 1%, well inside 5%. Each
// recording takes about a second.
const std::string kBlocks = " -n 20 -m 20";

struct Reader {
  std::string name, perf;
};

std::vector<Reader> readers() { return {{"Debian's perf 6.1", kDebianPerf}, {"perf 6.12", perf612_path()}}; }

enum class Mode { kAggregated, kTimeline };
void PrintTo(Mode m, std::ostream* os) { *os << (m == Mode::kAggregated ? "aggregated" : "--timeline"); }

struct Recorded {
  RunResult record;
  std::vector<Truth> truth;
  std::vector<Identity> identity;
  uint64_t missed_wakeups = 0;

  const Truth& truth_of(const std::string& function) const {
    for (const auto& t : truth)
      if (t.function == function) return t;
    throw std::runtime_error("no truth line for " + function + " in:\n" + record.out);
  }
  const Identity& identity_of(const std::string& comm) const {
    for (const auto& id : identity)
      if (id.comm == comm) return id;
    throw std::runtime_error("no identity line for " + comm + " in:\n" + record.out);
  }
};

// Records `command` (a workload, with its path) into dir/perf.data.
Recorded record(const TempDir& dir, Mode mode, const std::string& command) {
  Recorded r;
  r.record = run(kOffwake + " record " + (mode == Mode::kTimeline ? "--timeline " : "") + "-o " +
                 dir.file("perf.data") + " -- " + command);
  r.truth = parse_truth(r.record.out);
  r.identity = parse_identity(r.record.out);
  r.missed_wakeups = blocks_without_waker(r.record.err);
  return r;
}

// The recording read by `reader`; an empty list, and a failure, if the reader is missing.
std::vector<ScriptSample> read(const TempDir& dir, const Reader& reader) {
  if (access(reader.perf.c_str(), X_OK) != 0) {
    ADD_FAILURE() << reader.name << " is missing at " << reader.perf
                  << ": scripts/build-perf612.sh builds it (make -f Makefile.perf deps runs it)";
    return {};
  }
  auto script = run(reader.perf + " script " + kPerfScriptTimedFields + " -i " + dir.file("perf.data"));
  EXPECT_EQ(script.status, 0) << script.err;
  EXPECT_EQ(script.err, "");
  auto samples = parse_perf_script(script.out);
  add_block_counts(samples, dir.file("perf.data"));  // the blocks each sample sums
  return samples;
}

bool has_unknown_user_frame(const ScriptSample& s) {
  for (const auto& f : s.frames)
    if (!f.kernel() && f.sym == "[unknown]") return true;
  return false;
}

std::string describe(const ScriptSample& s) {
  std::ostringstream o;
  o << "'" << s.comm << "' " << s.pid << "/" << s.tid << " at " << s.time_ns << " " << s.event << ":";
  for (const auto& f : s.frames)
    if (!f.kernel()) o << " " << f.sym;
  return o.str();
}

// The sample was taken while its thread had identity `id`: its comm, and a time inside the
// workload's interval for it (so that perf resolves the comm and the maps it had then).
void expect_identity(const ScriptSample& s, const Identity& id) {
  EXPECT_EQ(s.comm, id.comm) << describe(s);
  EXPECT_FALSE(has_unknown_user_frame(s)) << describe(s);
  ASSERT_TRUE(s.has_time) << describe(s);
  EXPECT_GE(s.time_ns, id.from_ns) << "stamped before the thread was '" << id.comm << "': " << describe(s);
  EXPECT_LE(s.time_ns, id.to_ns) << "stamped after the thread stopped being '" << id.comm << "': " << describe(s);
}

// |recorded - truth| <= 5% of truth (kBlockedTimeTolerance) + slack.
void expect_near_truth(uint64_t recorded, uint64_t truth, uint64_t slack, const std::string& what) {
  ASSERT_GT(truth, 0u) << what;
  double diff = std::abs(static_cast<double>(recorded) - static_cast<double>(truth));
  EXPECT_LE(diff, kBlockedTimeTolerance * truth + slack)
      << what << ": recorded " << recorded << " ns, truth " << truth << " ns, allowance for blocks without a waker "
      << slack << " ns";
}

bool is_user_leaf(const ScriptSample& s, const std::string& function) {
  const ScriptFrame* leaf = s.user_leaf();
  return leaf && leaf->sym == function;
}

// Whether the blocked sample samples[i] has the waker "[no waker seen]". When no wakeup was
// seen, and no switch-in either, the recorder ends the block at the thread's next switch-out:
// an upper bound (late_ends in bpf-progs/offwake.bpf.c). Its time and length, and so the
// identity perf gives it, may then be those of what the thread did next. The recorder counts
// these blocks; it happens in about one recording in twenty here, idle or not.
bool waker_unseen(const std::vector<ScriptSample>& samples, size_t i) {
  return i + 1 < samples.size() && samples[i + 1].event == "offwake-waker" && samples[i + 1].comm == "[no waker seen]";
}

// The summed period of the blocks of `t`'s thread without a waker: they may have gone to
// either side of an identity change. As rarely as the truth allows (expect_misses_within_truth:
// one block in 20 of the truth's, in number and time), and no more of them than the recording counted.
struct Unseen {
  uint64_t blocks = 0, ns = 0;
};
Unseen unseen_of(const std::vector<ScriptSample>& samples, const Truth& t, uint64_t missed_wakeups) {
  Unseen u;
  uint64_t all = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].event != "offwake-time" || !waker_unseen(samples, i)) continue;
    all += blocks_of(samples[i]);
    if (samples[i].tid != t.tid) continue;
    u.blocks += blocks_of(samples[i]);
    u.ns += samples[i].period;
  }
  expect_misses_within_truth(u.blocks, u.ns, t, "without a waker");
  EXPECT_LE(all, missed_wakeups) << "a block without a waker that the summary did not count";
  return u;
}

// The blocks of `t` (its thread, blocked with `t.function` as the user leaf) add up to the
// workload's measure, in time (within 5%, but for the blocks without a waker) and in number
// (exact, but for those: each may have gone to the other identity).
void expect_near_truth(uint64_t recorded_ns, uint64_t blocks, const std::vector<ScriptSample>& samples, const Truth& t,
                       uint64_t missed_wakeups) {
  const Unseen unseen = unseen_of(samples, t, missed_wakeups);
  const std::string what = "time blocked in " + t.function + " by " + std::to_string(t.tid);
  expect_near_truth(recorded_ns, t.blocked_ns, unseen.ns, what);
  EXPECT_LE(blocks, t.count + unseen.blocks) << what << ": blocks against the workload's " << t.count;
  EXPECT_GE(blocks + unseen.blocks, t.count) << what << ": blocks against the workload's " << t.count;
}

// The blocks of `t` (its thread, blocked with `t.function` as the user leaf) were taken as
// identity `id`, and add up to the workload's measure. Returns the indexes in `samples` of
// those that were checked (all but the blocks without a waker).
std::vector<size_t> expect_blocks_as(const std::vector<ScriptSample>& samples, const Truth& t, const Identity& id,
                                     uint64_t missed_wakeups) {
  std::vector<size_t> found;
  uint64_t ns = 0, blocks = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const ScriptSample& s = samples[i];
    if (s.event != "offwake-time" || s.tid != t.tid || !is_user_leaf(s, t.function)) continue;
    ns += s.period;
    blocks += blocks_of(s);
    if (waker_unseen(samples, i)) continue;
    found.push_back(i);
    SCOPED_TRACE(t.function);
    expect_identity(s, id);
  }
  expect_near_truth(ns, blocks, samples, t, missed_wakeups);
  return found;
}

// The waker samples of the blocks of `t` name the waker `t` names, as identity `id`, waking
// from t.waker_function. A wakeup the kernel never traced ("[no waker seen]") is accepted as
// rarely as the truth allows, and only as many times as the recording counted them.
void expect_wakers_as(const std::vector<ScriptSample>& samples, const Truth& t, const Identity& id,
                      uint64_t missed_wakeups) {
  uint64_t ns = 0, blocks = 0, seen = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const ScriptSample& s = samples[i];
    if (s.event != "offwake-time" || s.tid != t.tid || !is_user_leaf(s, t.function)) continue;
    ns += s.period;
    blocks += blocks_of(s);
    ASSERT_TRUE(i + 1 < samples.size() && samples[i + 1].event == "offwake-waker") << "no waker after " << describe(s);
    const ScriptSample& w = samples[i + 1];
    if (w.comm == "[no waker seen]") continue;
    ++seen;
    SCOPED_TRACE("waker of " + t.function);
    EXPECT_EQ(w.tid, t.waker_tid) << describe(w);
    EXPECT_TRUE(is_user_leaf(w, t.waker_function)) << describe(w);
    expect_identity(w, id);
  }
  EXPECT_GT(seen, 0u) << "no waker sample for " << t.function;
  expect_near_truth(ns, blocks, samples, t, missed_wakeups);
}

// No sample of thread `tid` has a frame named `sym` (but for blocks without a waker).
void expect_no_frame(const std::vector<ScriptSample>& samples, uint32_t tid, const std::string& sym) {
  for (size_t i = 0; i < samples.size(); ++i) {
    const ScriptSample& s = samples[i];
    if (s.tid == tid && !(s.event == "offwake-time" && waker_unseen(samples, i))) {
      EXPECT_FALSE(s.has_frame(sym)) << "symbolized in the wrong binary: " << describe(s);
    }
  }
}

// Symbols of an ELF file (nm -S): start and size.
struct Symbol {
  uint64_t start = 0, size = 0;
};
std::map<std::string, Symbol> symbols(const std::string& path) {
  std::map<std::string, Symbol> out;
  std::istringstream in(run("nm -S " + path).out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string start, size, type, name;
    if (!(f >> start >> size >> type >> name)) continue;  // symbols without a size
    out[name] = {std::stoull(start, nullptr, 16), std::stoull(size, nullptr, 16)};
  }
  return out;
}

// The premise of the exec and pid-reuse tests: `functions` of `first` lie inside `padding` of
// `second`, so a frame of `first` resolved in `second` names `padding`.
void expect_laid_over(const std::string& first, const std::vector<std::string>& functions, const std::string& second,
                      const std::string& padding) {
  auto a = symbols(kWorkloads + first), b = symbols(kWorkloads + second);
  ASSERT_TRUE(b.count(padding)) << second;
  const Symbol& pad = b[padding];
  for (const auto& f : functions) {
    ASSERT_TRUE(a.count(f)) << first << " " << f;
    EXPECT_GE(a[f].start, pad.start) << first << " " << f;
    EXPECT_LE(a[f].start + a[f].size, pad.start + pad.size) << first << " " << f;
  }
}

class Identities : public ::testing::TestWithParam<Mode> {};

// A thread blocks in blocks_as_first as "wl_rename", renames itself "second-name", and blocks
// in blocks_as_second.
TEST_P(Identities, RenamedThread) {
  TempDir dir;
  Recorded r = record(dir, GetParam(), kWorkloads + "wl_rename" + kBlocks);
  ASSERT_EQ(r.record.status, 0) << r.record.err;
  SCOPED_TRACE("perf offwake record said:\n" + r.record.err);
  const Truth& first = r.truth_of("blocks_as_first");
  const Truth& second = r.truth_of("blocks_as_second");
  ASSERT_EQ(first.tid, second.tid);
  for (const Reader& reader : readers()) {
    SCOPED_TRACE(reader.name);
    auto samples = read(dir, reader);
    expect_blocks_as(samples, first, r.identity_of("wl_rename"), r.missed_wakeups);
    expect_blocks_as(samples, second, r.identity_of("second-name"), r.missed_wakeups);
  }
}

// wl_exec_a blocks in a_waits, then execs wl_exec_b (same pid and tid), which blocks in
// b_waits. Both are non-PIE at one base, and wl_exec_b's b_padding covers wl_exec_a's code.
TEST_P(Identities, ExecIntoAnotherBinary) {
  expect_laid_over("wl_exec_a", {"a_waits", "main"}, "wl_exec_b", "b_padding");
  TempDir dir;
  Recorded r = record(dir, GetParam(), kWorkloads + "wl_exec_a" + kBlocks);
  ASSERT_EQ(r.record.status, 0) << r.record.err;
  SCOPED_TRACE("perf offwake record said:\n" + r.record.err);
  const Truth& a = r.truth_of("a_waits");
  const Truth& b = r.truth_of("b_waits");
  ASSERT_EQ(a.tid, b.tid);
  for (const Reader& reader : readers()) {
    SCOPED_TRACE(reader.name);
    auto samples = read(dir, reader);
    for (size_t i : expect_blocks_as(samples, a, r.identity_of("wl_exec_a"), r.missed_wakeups))
      EXPECT_TRUE(samples[i].has_frame("main")) << describe(samples[i]);
    expect_blocks_as(samples, b, r.identity_of("wl_exec_b"), r.missed_wakeups);
    expect_no_frame(samples, a.tid, "b_padding");
  }
}

// twin-one/wl_twin blocks in twin_one_waits, then execs twin-two/wl_twin, which blocks in
// twin_two_waits: one comm, one code (the functions share an address), and under setarch -R one
// libc address, so the blocks on either side of the exec have the same pid, tid, comm and
// stacks. Only the exec tells them apart: aggregated blocks must not be merged across it.
TEST_P(Identities, ExecSameCommSameAddresses) {
  auto one = symbols(kWorkloads + "twin-one/wl_twin"), two = symbols(kWorkloads + "twin-two/wl_twin");
  ASSERT_TRUE(one.count("twin_one_waits") && two.count("twin_two_waits"));
  ASSERT_EQ(one["twin_one_waits"].start, two["twin_two_waits"].start);
  TempDir dir;
  // setarch -R: no address randomization (kept across exec), so libc has one address too.
  Recorded r = record(dir, GetParam(),
                      "setarch -R " + kWorkloads + "twin-one/wl_twin" + kBlocks + " -x " + kWorkloads + "twin-two/wl_twin");
  ASSERT_EQ(r.record.status, 0) << r.record.err;
  SCOPED_TRACE("perf offwake record said:\n" + r.record.err);
  const Truth& a = r.truth_of("twin_one_waits");
  const Truth& b = r.truth_of("twin_two_waits");
  ASSERT_EQ(a.tid, b.tid);
  ASSERT_EQ(r.identity.size(), 2u) << r.record.out;  // one per binary, in the order they ran
  for (const Reader& reader : readers()) {
    SCOPED_TRACE(reader.name);
    auto samples = read(dir, reader);
    expect_blocks_as(samples, a, r.identity[0], r.missed_wakeups);
    expect_blocks_as(samples, b, r.identity[1], r.missed_wakeups);
  }
}

// wl_pid_reuse's first child (wl_reuse_first) blocks and wakes its parent, and exits; a second
// child (wl_reuse_second, whose second_padding covers the first's code) gets the same pid and
// does the same. Each child's blocks and wakeups are its own.
TEST_P(Identities, ReusedPidBlockedAndWaking) {
  expect_laid_over("wl_reuse_first", {"first_child_waits", "first_child_wakes", "main"}, "wl_reuse_second",
                   "second_padding");
  TempDir dir;
  Recorded r = record(dir, GetParam(), kWorkloads + "wl_pid_reuse" + kBlocks);
  ASSERT_EQ(r.record.status, 0) << r.record.err;
  SCOPED_TRACE("perf offwake record said:\n" + r.record.err);
  const Truth& first = r.truth_of("first_child_waits");
  const Truth& second = r.truth_of("second_child_waits");
  ASSERT_EQ(first.tid, second.tid) << "the pid was not reused";
  const Identity& first_id = r.identity_of("wl_reuse_first");
  const Identity& second_id = r.identity_of("wl_reuse_second");
  const Truth& woken_by_first = r.truth_of("parent_waits_for_first");
  const Truth& woken_by_second = r.truth_of("parent_waits_for_second");
  ASSERT_EQ(woken_by_first.waker_tid, first.tid);
  ASSERT_EQ(woken_by_second.waker_tid, first.tid);
  for (const Reader& reader : readers()) {
    SCOPED_TRACE(reader.name);
    auto samples = read(dir, reader);
    expect_blocks_as(samples, first, first_id, r.missed_wakeups);
    expect_blocks_as(samples, second, second_id, r.missed_wakeups);
    expect_wakers_as(samples, woken_by_first, first_id, r.missed_wakeups);
    expect_wakers_as(samples, woken_by_second, second_id, r.missed_wakeups);
    expect_no_frame(samples, first.tid, "second_padding");
    for (size_t i = 0; i < samples.size(); ++i) {  // the parent outlives both children, not the recording
      const ScriptSample& s = samples[i];
      if (s.event == "offwake-time" && !waker_unseen(samples, i) &&
          (is_user_leaf(s, woken_by_first.function) || is_user_leaf(s, woken_by_second.function))) {
        EXPECT_EQ(s.comm, "wl_pid_reuse") << describe(s);
        EXPECT_FALSE(has_unknown_user_frame(s)) << describe(s);
      }
    }
  }
}

// A thread of wl_exited blocks (woken by the main thread), wakes the main thread, and exits
// half a second before the recording ends.
TEST_P(Identities, ThreadThatExitedLongBefore) {
  TempDir dir;
  Recorded r = record(dir, GetParam(), kWorkloads + "wl_exited" + kBlocks + " -l 500");
  ASSERT_EQ(r.record.status, 0) << r.record.err;
  SCOPED_TRACE("perf offwake record said:\n" + r.record.err);
  const Truth& thread = r.truth_of("exited_thread_waits");
  const Truth& main_thread = r.truth_of("main_waits_for_thread");
  const Identity& id = r.identity_of("wl_exited");
  ASSERT_EQ(id.tid, thread.tid);
  ASSERT_EQ(main_thread.waker_tid, thread.tid);
  for (const Reader& reader : readers()) {
    SCOPED_TRACE(reader.name);
    auto samples = read(dir, reader);
    for (size_t i : expect_blocks_as(samples, thread, id, r.missed_wakeups))
      EXPECT_TRUE(samples[i].has_frame("short_lived")) << describe(samples[i]);
    expect_wakers_as(samples, main_thread, id, r.missed_wakeups);
    // Every block of the thread, also the pause in glibc's nanosleep before its last wakeup,
    // has its comm and symbols. (Not its time: the thread could block on its way out, after
    // the workload's last clock reading.)
    size_t blocks = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      const ScriptSample& s = samples[i];
      if (s.event != "offwake-time" || s.tid != thread.tid || !s.has_user_frames() || waker_unseen(samples, i))
        continue;
      ++blocks;
      EXPECT_EQ(s.comm, id.comm) << describe(s);
      EXPECT_FALSE(has_unknown_user_frame(s)) << describe(s);
    }
    EXPECT_GT(blocks, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(, Identities, ::testing::Values(Mode::kAggregated, Mode::kTimeline),
                         [](const auto& info) { return info.param == Mode::kAggregated ? "Aggregated" : "Timeline"; });

}  // namespace
}  // namespace offwake::test
