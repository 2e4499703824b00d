// What every end-to-end test does with a recording: record a workload, read it back with
// perf script, and check the blocked samples of its truth, with the waker after each, against
// its own measurement.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "support/tolerances.h"
#include "support/truth.h"

namespace offwake::test {

// `perf offwake record -o DIR/perf.data ARGS` (run under `prefix`, e.g. setpriv, if given),
// then Debian's perf script of the file with `fields` (kPerfScriptFields by default), each
// offwake-time sample with its number of blocks (add_block_counts).
struct RecordRun {
  RunResult record;
  std::vector<Truth> truth;  // the workload's truth lines
  std::vector<ScriptSample> samples;
  RunResult script;
};

inline RecordRun record_and_script(const TempDir& dir, const std::string& args, const std::string& fields = "",
                                   const std::string& prefix = "") {
  RecordRun r;
  const std::string data = dir.file("perf.data");
  const std::string cmd = kOffwake + " record -o " + data + " " + args;
  r.record = run(prefix.empty() ? cmd : prefix + " '" + cmd + "'");
  r.truth = parse_truth(r.record.out);
  r.script = run(std::string("perf script ") + (fields.empty() ? kPerfScriptFields : fields) + " -i " + data);
  r.samples = parse_perf_script(r.script.out);
  add_block_counts(r.samples, data);
  return r;
}

// The recording succeeded and perf read it without a word on stderr.
inline void expect_clean(const RecordRun& r) {
  EXPECT_EQ(r.record.status, 0) << r.record.err;
  EXPECT_NE(r.record.err.find("[ perf offwake record: Captured and wrote"), std::string::npos) << r.record.err;
  EXPECT_EQ(r.script.status, 0) << r.script.err;
  EXPECT_EQ(r.script.err, "");
}

// The samples of a truth's blocks. Counts are blocks (an aggregated sample sums several: its
// raw payload says how many, add_block_counts), else samples.
struct Blocked {
  Truth truth;
  uint64_t ns = 0;
  uint64_t count = 0;                        // blocks, from the raw payloads
  bool counted = false;                      // every sample had its count (add_block_counts)
  std::vector<const ScriptSample*> blocked;  // the truth thread's samples in its function
  std::vector<const ScriptSample*> wakers;   // the wakers seen after them
  uint64_t unseen = 0;                       // blocks whose waker was not seen
  uint64_t unseen_ns = 0;                    // and their time
};

// The blocks of a sample: its payload's count, or 1 without it.
inline uint64_t blocks_of(const ScriptSample& s) { return s.has_blocks ? s.blocks : 1; }

// Blocks of `t` that the recording has without a waker, or without their switch-in
// (`what`): no more than the truth allows, in number and in time (max_missed_blocks,
// max_missed_ns, support/tolerances.h). The bound is the truth's, never the recording's.
inline void expect_misses_within_truth(uint64_t blocks, uint64_t ns, const Truth& t, const std::string& what) {
  EXPECT_LE(blocks, max_missed_blocks(t.count))
      << blocks << " blocks " << what << " of the truth's " << t.count << " (" << max_missed_blocks(t.count)
      << " allowed)";
  EXPECT_LE(ns, max_missed_ns(t.blocked_ns, t.count))
      << ns << " ns blocked " << what << ", more than the truth allows of its " << t.blocked_ns << " ns in "
      << t.count;
}

// The blocked samples of the truth's thread in its named function, each with the waker sample
// that must follow it. A wakeup the kernel never traced leaves a "[no waker seen]" waker:
// accepted as rarely as the truth allows (expect_misses_within_truth), and only if the
// recording counted it (`counted_without_waker`, the summary's blocks_without_waker()), never
// silently. On this VM a switch-in now and then fires no sched_switch, and a wakeup may go
// unseen (perf's tracepoints miss the same events); none in most recordings.
inline Blocked blocked_in(const std::vector<ScriptSample>& samples, const Truth& t,
                          uint64_t counted_without_waker = std::numeric_limits<uint64_t>::max()) {
  Blocked b;
  b.truth = t;
  b.counted = true;
  for (size_t i = 0; i < samples.size(); ++i) {
    const ScriptSample& s = samples[i];
    if (s.event != "offwake-time" || s.tid != t.tid || !s.has_frame(t.function)) continue;
    b.ns += s.period;
    b.count += blocks_of(s);
    b.counted &= s.has_blocks;
    b.blocked.push_back(&s);
    EXPECT_TRUE(i + 1 < samples.size() && samples[i + 1].event == "offwake-waker") << "no waker after a sample";
    if (i + 1 >= samples.size()) continue;
    EXPECT_EQ(samples[i + 1].period, s.period);
    if (samples[i + 1].comm == "[no waker seen]") {
      b.unseen += blocks_of(s);
      b.unseen_ns += s.period;
    } else {
      b.wakers.push_back(&samples[i + 1]);
    }
  }
  expect_misses_within_truth(b.unseen, b.unseen_ns, t, "without a waker");
  EXPECT_LE(b.unseen, counted_without_waker) << "a block without a waker that the summary did not count";
  return b;
}

// The blocked samples that have a kernel stack. A block whose switch-in the kernel did not
// trace has none ("ended late"): as rarely as the truth allows (expect_misses_within_truth),
// and no more than perf offwake record's summary counted (`record_stderr`).
inline std::vector<const ScriptSample*> with_kernel_stacks(const Blocked& b, const std::string& record_stderr) {
  std::vector<const ScriptSample*> out;
  uint64_t late = 0, late_ns = 0;
  for (const ScriptSample* s : b.blocked) {
    if (s->has_kernel_frames()) {
      out.push_back(s);
    } else {
      late += blocks_of(*s);
      late_ns += s->period;
    }
  }
  expect_misses_within_truth(late, late_ns, b.truth, "without a kernel stack (ended late)");
  EXPECT_LE(late, blocks_ended_late(record_stderr)) << record_stderr;
  return out;
}

// The workloads time their own blocking: the recording must agree within 5%
// (kBlockedTimeTolerance, support/tolerances.h: what the workload's clock sees and the
// recorder rightly does not). The error is kept as a test property, to watch the margin.
inline void expect_within_5_percent(uint64_t recorded, uint64_t truth, const std::string& what = "") {
  ASSERT_GT(truth, 0u);
  const double err = std::abs(static_cast<double>(recorded) - static_cast<double>(truth)) / static_cast<double>(truth);
  EXPECT_LT(err, kBlockedTimeTolerance) << what << (what.empty() ? "" : ": ") << "recorded " << recorded
                                        << " ns, truth " << truth << " ns";
  ::testing::Test::RecordProperty("relative_error_ppm", static_cast<int>(err * 1e6));
}

// The truth's blocks, all of them: their number exact (from the raw payloads: the samples went
// through add_block_counts) and their time within 5%. A block lost
// or counted twice is 5-10% of a truth of 10 to 20 blocks, at the edge of the time tolerance;
// the count catches it. Exact: the workloads count blocks as the kernel does (wl_blocks_so_far,
// tests/workloads/wl_common.h).
inline void expect_truth_blocks(const Blocked& b, const std::string& what = "") {
  EXPECT_TRUE(b.counted) << what << (what.empty() ? "" : ": ")
                         << "a sample without its count of blocks (add_block_counts)";
  EXPECT_EQ(b.count, b.truth.count) << what << (what.empty() ? "" : ": ") << "blocks recorded in "
                                    << b.truth.function << " against the workload's count";
  expect_within_5_percent(b.ns, b.truth.blocked_ns, what);
}

}  // namespace offwake::test
