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

#include "support/perf_script.h"
#include "support/run.h"
#include "support/tolerances.h"

namespace offwake::test {

// `perf offwake record -o DIR/perf.data ARGS` (run under `prefix`, e.g. setpriv, if given),
// then Debian's perf script of the file with `fields` (kPerfScriptFields by default).
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
  const std::string cmd = OFFWAKE_BINARY_DIR "/perf-plugin/perf-offwake record -o " + data + " " + args;
  r.record = run(prefix.empty() ? cmd : prefix + " '" + cmd + "'");
  r.truth = parse_truth(r.record.out);
  r.script = run(std::string("perf script ") + (fields.empty() ? kPerfScriptFields : fields) + " -i " + data);
  r.samples = parse_perf_script(r.script.out);
  return r;
}

// The recording succeeded and perf read it without a word on stderr.
inline void expect_clean(const RecordRun& r) {
  EXPECT_EQ(r.record.status, 0) << r.record.err;
  EXPECT_NE(r.record.err.find("[ perf offwake record: Captured and wrote"), std::string::npos) << r.record.err;
  EXPECT_EQ(r.script.status, 0) << r.script.err;
  EXPECT_EQ(r.script.err, "");
}

struct Blocked {
  uint64_t ns = 0;
  std::vector<const ScriptSample*> blocked;  // the truth thread's samples in its function
  std::vector<const ScriptSample*> wakers;   // the wakers seen after them
  uint64_t unseen = 0;                       // samples whose waker was not seen
};

// The blocked samples of the truth's thread in its named function, each with the waker sample
// that must follow it. A wakeup the kernel never traced leaves a "[no waker seen]" waker:
// accepted at most `missed_wakeups` times (the count the recording's summary printed, see
// blocks_without_waker()), never silently. On this VM sched_waking now and then does not fire
// on a CPU leaving idle (perf's tracepoints miss the same events); none in most recordings.
inline Blocked blocked_in(const std::vector<ScriptSample>& samples, const Truth& t,
                          uint64_t missed_wakeups = std::numeric_limits<uint64_t>::max()) {
  Blocked b;
  for (size_t i = 0; i < samples.size(); ++i) {
    const ScriptSample& s = samples[i];
    if (s.event != "offwake-time" || s.tid != t.tid || !s.has_frame(t.function)) continue;
    b.ns += s.period;
    b.blocked.push_back(&s);
    EXPECT_TRUE(i + 1 < samples.size() && samples[i + 1].event == "offwake-waker") << "no waker after a sample";
    if (i + 1 >= samples.size()) continue;
    EXPECT_EQ(samples[i + 1].period, s.period);
    if (samples[i + 1].comm == "[no waker seen]") ++b.unseen;
    else b.wakers.push_back(&samples[i + 1]);
  }
  EXPECT_LE(b.unseen, missed_wakeups) << "a block without a waker that the summary did not count";
  return b;
}

// The blocked samples that have a kernel stack. A block whose switch-in the kernel did not
// trace has none ("ended late", counted in perf offwake record's summary, `record_stderr`):
// that many samples may lack kernel frames, no more.
inline std::vector<const ScriptSample*> with_kernel_stacks(const Blocked& b, const std::string& record_stderr) {
  std::vector<const ScriptSample*> out;
  for (const ScriptSample* s : b.blocked)
    if (s->has_kernel_frames()) out.push_back(s);
  EXPECT_LE(b.blocked.size() - out.size(), blocks_ended_late(record_stderr)) << record_stderr;
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

}  // namespace offwake::test
