// RecordStats' BPF time (samples/record_stats.h): a window's share, what is stored, and the
// summary's line.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "perfdata/bytes.h"
#include "samples/record_stats.h"

namespace offwake {
namespace {

RecordStats::BpfTime measured(std::initializer_list<RecordStats::ProgramTime> programs) {
  RecordStats::BpfTime t;
  t.measured = true;
  t.programs = programs;
  return t;
}

std::map<std::string, uint64_t> stored(const RecordStats& s) {
  std::map<std::string, uint64_t> out;
  for (const auto& [k, v] : s.fields()) out[k] = v;
  return out;
}

std::string summary_line(const RecordStats& s) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  print_bpf_time_summary(f, s);
  fclose(f);
  std::string out(buf, len);
  free(buf);
  return out;
}

// A window's share is by program name: the programs' order need not be the same, and a
// program the window's start did not list keeps all of its counts.
TEST(RecordStatsBpfTime, AWindowSubtractsItsStartProgramByProgram) {
  auto now = measured({{"offwake_switch", 100, 5000}, {"offwake_waking", 60, 3000}, {"offwake_fork", 2, 40}});
  now.subtract(measured({{"offwake_waking", 10, 1000}, {"offwake_switch", 40, 2000}}));
  ASSERT_EQ(now.programs.size(), 3u);
  EXPECT_EQ(now.programs[0].runs, 60u);
  EXPECT_EQ(now.programs[0].ns, 3000u);
  EXPECT_EQ(now.programs[1].runs, 50u);
  EXPECT_EQ(now.programs[1].ns, 2000u);
  EXPECT_EQ(now.programs[2].runs, 2u);
  EXPECT_EQ(now.runs(), 112u);
  EXPECT_EQ(now.ns(), 5040u);
}

// Measured: the sums and each program are stored. Not measured: zeros, no programs, and the
// flag that says so, whatever the kernel's partial counts were.
TEST(RecordStatsBpfTime, StoredOnlyWhenMeasured) {
  RecordStats s;
  s.bpf_time = measured({{"offwake_switch", 100, 5000}, {"offwake_waking", 60, 3000}});
  auto f = stored(s);
  EXPECT_EQ(f["bpf_time_measured"], 1u);
  EXPECT_EQ(f["bpf_prog_runs"], 160u);
  EXPECT_EQ(f["bpf_prog_run_ns"], 8000u);
  EXPECT_EQ(f["bpf_prog_runs.offwake_waking"], 60u);
  EXPECT_EQ(f["bpf_prog_run_ns.offwake_switch"], 5000u);

  s.bpf_time.measured = false;
  f = stored(s);
  EXPECT_EQ(f["bpf_time_measured"], 0u);
  EXPECT_EQ(f["bpf_prog_runs"], 0u);
  EXPECT_EQ(f["bpf_prog_run_ns"], 0u);
  EXPECT_EQ(f.count("bpf_prog_runs.offwake_waking"), 0u);
}

// The line: the time with the task work's, its share of one CPU, each program that ran.
TEST(RecordStatsBpfTime, TheSummaryLine) {
  RecordStats s;
  s.duration_ns = 2'000'000'000;
  s.bpf_time = measured({{"offwake_switch", 100, 50'000'000}, {"offwake_exec", 1, 1500}, {"offwake_fork", 0, 0}});
  s.counters.user_work_runs = 4;
  s.counters.user_work_ns = 10'000'000;
  EXPECT_EQ(summary_line(s),
            "[ perf offwake record: BPF programs: 0.060 s of CPU, 3.00% of one CPU over 2.000 s: offwake_switch 100 "
            "runs at 500000 ns, offwake_exec 1 run at 1500 ns, task work 4 runs at 2500000 ns (timed by itself) ]\n");
  s.bpf_time.measured = false;
  EXPECT_EQ(summary_line(s), "");
}

// A corrupt section's text is echoed quoted, its unprintable bytes as \xNN: none reaches the
// terminal as it is.
TEST(RecordStatsDecode, ACorruptKeyIsEchoedWithItsUnprintableBytesQuoted) {
  for (const std::string& line : {std::string("unwind_tU\xef\x1b[31m"), std::string("bpf_prog_runs=1\x07\n2")}) {
    perfdata::ByteWriter w;
    w.put<uint32_t>(1);
    w.put_header_string(line);
    auto decoded = decode_record_stats(w.bytes());
    ASSERT_FALSE(decoded.ok()) << line;
    const std::string m = decoded.error().message();
    EXPECT_EQ(decoded.error().kind(), ErrorKind::kBadInput);
    for (const char c : m) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << m;
    EXPECT_TRUE(m == "offwake counters: not key=value: 'unwind_tU\\xef\\x1b[31m'" ||
                m == "offwake counters: not a number: 'bpf_prog_runs=1\\x07\\x0a2'")
        << m;
  }
}

}  // namespace
}  // namespace offwake
