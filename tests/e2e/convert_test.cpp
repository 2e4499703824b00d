// End to end, as root: Debian's perf 6.1 records a workload that knows its own truth with the
// scheduler tracepoints (system-wide, and per command with --switch-events), perf offwake
// convert turns the recording into an off-wake one, and Debian's perf script reads it: the
// blocked time of the workload's function within 5% of its truth (kBlockedTimeTolerance,
// support/tolerances.h), its waker linked (a wakeup perf missed, as it does on this VM for a
// CPU leaving idle, only as often as convert counted), the same blocked and waker functions
// as perf offwake record finds. Bad input gives a one-line error and a non-zero exit, never a
// crash.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/blocked_samples.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "support/truth.h"
#include "support/waker_names.h"

namespace offwake::test {
namespace {

const std::string kSchedEvents = " -e sched:sched_switch -e sched:sched_waking ";
const std::string kSystemWide = kSchedEvents + "-g -a";
const std::string kPerTask = kSchedEvents + "--switch-events -g";

// Debian's perf record of the scheduler tracepoints. It may abort at its end ("assertion
// failed at util/build-id.c", stack smashing): the kernel leaks the build-id bit onto its
// MMAP2 records while another tool on the system asks for build ids (perf offwake record did,
// until Record.PerfRecordBesideARecordingIsUnharmed), and perf 6.1 reads dev/inode as a build
// id. A few tries; the reader's side of
// that is in record_codec_test (Mmap2BuildIdBitOverDevInodeIsReadAsDevInode). Recordings
// that need no build ids are made with -B (--no-buildid), which skips what aborts. Eight tries
// 200 ms apart: the abort comes from what other tools do at that moment, not from this test.
RunResult stock_record(const std::string& args) {
  RunResult r;
  for (int attempt = 0; attempt < 8; ++attempt) {
    r = run(std::string(kDebianPerf) + " record -q " + args);
    if (r.status != 134) break;
    usleep(200'000);
  }
  return r;
}

struct Converted {
  RunResult record, convert, script;
  std::vector<Truth> truth;
  std::vector<ScriptSample> samples;
};

// Debian's perf records `workload` with `recipe` into dir/stock.data; converted into
// dir/offwake.data and read back with perf script.
Converted stock_then_convert(const TempDir& dir, const std::string& recipe, const std::string& workload) {
  Converted c;
  // On CPU 0: perf's tracepoint events on this VM's CPU 1 miss what happens while it idles
  // (see tracepoint_test.cpp); a soak run lost one of ten blocks to that (-10%).
  c.record = stock_record("-o " + dir.file("stock.data") + recipe + " -- taskset -c 0 " + kWorkloads + workload);
  c.truth = parse_truth(c.record.out);
  c.convert = run(kOffwake + " convert -i " + dir.file("stock.data") + " -o " + dir.file("offwake.data"));
  c.script = run(std::string(kDebianPerf) + " script " + kPerfScriptFields + " -i " + dir.file("offwake.data"));
  c.samples = parse_perf_script(c.script.out);
  add_block_counts(c.samples, dir.file("offwake.data"));
  return c;
}

// The first kernel frame of a stack (the function that called into the scheduler).
std::string kernel_leaf(const ScriptSample& s) {
  for (const auto& f : s.frames)
    if (f.kernel()) return f.sym;
  return "";
}

// The truth's blocks are there, as many as the workload counted, within 5%, woken by the truth's waker from its function; the
// blocked kernel stack starts where perf offwake record's does (scheduler frames dropped).
void expect_truth(const Converted& c, const std::string& comm) {
  ASSERT_EQ(c.record.status, 0) << c.record.err;
  ASSERT_EQ(c.convert.status, 0) << c.convert.err;
  EXPECT_NE(c.convert.err.find("[ perf offwake convert: wrote"), std::string::npos) << c.convert.err;
  ASSERT_EQ(c.script.status, 0) << c.script.err;
  EXPECT_EQ(c.script.err, "");
  ASSERT_EQ(c.truth.size(), 1u) << c.record.out;
  SCOPED_TRACE("convert said: " + c.convert.err);
  const Truth& t = c.truth[0];
  Blocked b = blocked_in(c.samples, t, blocks_without_waker(c.convert.err));
  expect_truth_blocks(b);
  ASSERT_FALSE(b.wakers.empty()) << c.script.out;
  uint64_t linked = 0;
  for (const ScriptSample* w : b.wakers) {
    EXPECT_EQ(w->tid, t.waker_tid);
    EXPECT_EQ(w->comm, comm);
    EXPECT_TRUE(w->has_frame(t.waker_function)) << "waker stack lacks " << t.waker_function;
    EXPECT_TRUE(w->has_frame("try_to_wake_up"));
    linked += w->tid == t.waker_tid;
  }
  EXPECT_GT(linked, 0u);
  for (const ScriptSample* s : b.blocked) {
    EXPECT_EQ(s->comm, comm);
    EXPECT_TRUE(s->has_frame("main"));
    EXPECT_FALSE(s->has_frame("__schedule")) << "scheduler frames are dropped";
    EXPECT_FALSE(s->has_frame("__traceiter_sched_switch"));
  }
}

// perf offwake record of the same workload: the same blocked and waker functions, and the
// same kernel function the blocked stack starts in.
void expect_like_record(const Converted& c, const TempDir& dir, const std::string& workload) {
  RunResult rec = run(kOffwake + " record -q -o " + dir.file("bpf.data") + " -- " + kWorkloads + workload);
  ASSERT_EQ(rec.status, 0) << rec.err;
  auto truth = parse_truth(rec.out);
  ASSERT_EQ(truth.size(), 1u);
  RunResult script = run(std::string(kDebianPerf) + " script " + kPerfScriptFields + " -i " + dir.file("bpf.data"));
  ASSERT_EQ(script.status, 0) << script.err;
  auto bpf_samples = parse_perf_script(script.out);
  add_block_counts(bpf_samples, dir.file("bpf.data"));
  Blocked bpf = blocked_in(bpf_samples, truth[0]);
  Blocked conv = blocked_in(c.samples, c.truth[0]);
  ASSERT_FALSE(bpf.blocked.empty());
  ASSERT_FALSE(conv.blocked.empty());
  // Blocks ended late have no kernel stack in perf offwake record's file (with_kernel_stacks);
  // convert takes every stack at the switch-out, so each of its samples has one.
  const auto bpf_kernel = with_kernel_stacks(bpf, rec.err);
  ASSERT_FALSE(bpf_kernel.empty()) << rec.err;
  const ScriptSample* with_kernel = bpf_kernel[0];
  EXPECT_TRUE(conv.blocked[0]->has_kernel_frames());
  EXPECT_EQ(kernel_leaf(*with_kernel), kernel_leaf(*conv.blocked[0]));
  ASSERT_TRUE(with_kernel->user_leaf() && conv.blocked[0]->user_leaf());
  EXPECT_EQ(with_kernel->user_leaf()->sym, conv.blocked[0]->user_leaf()->sym);
  ASSERT_FALSE(bpf.wakers.empty());
  ASSERT_FALSE(conv.wakers.empty());
  ASSERT_TRUE(bpf.wakers[0]->user_leaf() && conv.wakers[0]->user_leaf());
  EXPECT_EQ(bpf.wakers[0]->user_leaf()->sym, conv.wakers[0]->user_leaf()->sym);
  ::testing::Test::RecordProperty("bpf_truth_ns", std::to_string(truth[0].blocked_ns));
  ::testing::Test::RecordProperty("bpf_blocked_ns", std::to_string(bpf.ns));
  ::testing::Test::RecordProperty("converted_truth_ns", std::to_string(c.truth[0].blocked_ns));
  ::testing::Test::RecordProperty("converted_blocked_ns", std::to_string(conv.ns));
}

TEST(Convert, PerTaskSwitchEventsPipeBetweenProcesses) {
  TempDir dir;
  Converted c = stock_then_convert(dir, kPerTask, "wl_pipe -n 10");
  expect_truth(c, "wl_pipe");
  expect_like_record(c, dir, "wl_pipe -n 10");
}

TEST(Convert, PerTaskSwitchEventsCondvarThreads) {
  TempDir dir;
  Converted c = stock_then_convert(dir, kPerTask, "wl_condvar -n 10");
  expect_truth(c, "wl_condvar");
  expect_like_record(c, dir, "wl_condvar -n 10");
}

TEST(Convert, SystemWidePipeBetweenProcesses) {
  TempDir dir;
  Converted c = stock_then_convert(dir, kSystemWide, "wl_pipe -n 10");
  expect_truth(c, "wl_pipe");
}

TEST(Convert, SystemWideCondvarThreads) {
  TempDir dir;
  Converted c = stock_then_convert(dir, kSystemWide, "wl_condvar -n 10");
  expect_truth(c, "wl_condvar");
}

// wl_pipe's parent waits for its child, which wakes it on its way out, after the kernel wrote
// the child's PERF_RECORD_EXIT: converted, as recorded, the group is stamped before that exit,
// so that perf 6.12, which forgets a thread at its exit, names the waker (it printed ":TID").
TEST(Convert, AWakerOnItsWayOutIsNamedByEveryPerf) {
  TempDir dir;
  Converted c = stock_then_convert(dir, kSystemWide, "wl_pipe -n 5");
  ASSERT_EQ(c.convert.status, 0) << c.convert.err;
  expect_wakers_named_by_every_perf(dir.file("offwake.data"), 3);
}

// The output is an off-wake recording like any: our own report and the bundled scripts, under
// our Python host and perf's, find the workload's functions in it.
// A user walk gone astray: wl_bad_frame's frame chain leads to the return address
// 0xffffffffffffff00, a word in perf's range of context markers, as code built without frame
// pointers leaves on real stacks (a system-wide recording beside a compile met one, and the
// whole conversion failed: "callchain entry 7 is an unknown context marker"). Every block is
// converted with its time, its stack ends at wl_bad_frame_sleep, and each blocked sample's cut
// callchain is counted: at least one per block of the workload's truth.
TEST(Convert, CallchainCutAtAWordThatIsNoContextMarker) {
  TempDir dir;
  // System-wide: the timer interrupt that wakes each nap runs in whatever task was on the CPU.
  Converted c = stock_then_convert(dir, kSystemWide, "wl_bad_frame -n 10 -m 20");
  ASSERT_EQ(c.record.status, 0) << c.record.err;
  ASSERT_EQ(c.convert.status, 0) << c.convert.err;
  ASSERT_EQ(c.script.status, 0) << c.script.err;
  ASSERT_EQ(c.truth.size(), 1u) << c.record.out;
  const Truth& t = c.truth[0];
  Blocked b = blocked_in(c.samples, t, blocks_without_waker(c.convert.err));
  ASSERT_FALSE(b.blocked.empty()) << c.script.out;
  for (const ScriptSample* s : b.blocked) {
    ASSERT_NE(s->user_leaf(), nullptr);
    EXPECT_EQ(s->user_leaf()->sym, "wl_bad_frame_sleep");
    EXPECT_TRUE(s->has_kernel_frames());
  }
  expect_truth_blocks(b, "wl_bad_frame_sleep");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(c.convert.err, m, std::regex(R"((\d+) callchains cut at a word that is no context marker)")))
      << c.convert.err;
  EXPECT_GE(std::stoull(m[1]), t.count) << c.convert.err;
}

TEST(Convert, ReadByReportAndBundledScripts) {
  TempDir dir;
  Converted c = stock_then_convert(dir, kPerTask, "wl_pipe -n 5");
  ASSERT_EQ(c.convert.status, 0) << c.convert.err;
  const std::string out = dir.file("offwake.data");
  // The stock recording itself is refused, with the way to read it: its samples are events,
  // which would count as on-CPU nanoseconds.
  const std::string stock = dir.file("stock.data");
  RunResult unconverted = run(kOffwake + " report --stdio -i " + stock);
  EXPECT_EQ(unconverted.status, 1);
  EXPECT_EQ(unconverted.out, "");
  EXPECT_EQ(unconverted.err, "perf offwake report: " + stock + " holds the scheduler tracepoints, not blocked time: "
                             "make it a recording of perf offwake with 'perf offwake convert -i " + stock +
                             " -o OUT' and read OUT\n");
  RunResult report = run(kOffwake + " report --stdio -i " + out);
  EXPECT_EQ(report.status, 0) << report.err;
  EXPECT_NE(report.out.find("wl_wait_for_message"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("wl_send_message"), std::string::npos) << report.out;
  // libc's local symbols come from its debug file, found by the build id the conversion took
  // from the (unchanged) file, as perf offwake record's own mappings have it.
  EXPECT_NE(report.out.find("main <- __libc_start_call_main"), std::string::npos) << report.out;
  RunResult ids = run(std::string(kDebianPerf) + " buildid-list -i " + out);
  EXPECT_NE(ids.out.find("libc.so.6"), std::string::npos) << ids.out;
  EXPECT_NE(ids.out.find("wl_pipe"), std::string::npos) << ids.out;
  const std::string collapse = std::string(OFFWAKE_SOURCE_DIR) + "/scripts/offwake-collapse.py";
  RunResult ours = run(kOffwake + " script -i " + out + " -s " + collapse);
  EXPECT_EQ(ours.status, 0) << ours.err;
  EXPECT_NE(ours.out.find("wl_wait_for_message"), std::string::npos) << ours.out;
  EXPECT_NE(ours.out.find("wl_send_message"), std::string::npos) << ours.out;
  RunResult perfs = run(std::string(kDebianPerf) + " script -i " + out + " -s " + collapse);
  if (perfs.err.find("Python scripting not supported") == std::string::npos) {
    EXPECT_EQ(perfs.status, 0) << perfs.err;
    EXPECT_NE(perfs.out.find("wl_wait_for_message"), std::string::npos) << perfs.out;
  }
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// A stream from perf record -o - converts too.
TEST(Convert, StreamInput) {
  TempDir dir;
  // The workload's truth line must not go into the stream on standard output.
  RunResult c = run(std::string(kDebianPerf) + " record -q -o -" + kPerTask + " -- bash -c 'exec " + kWorkloads +
                    "wl_pipe -n 5 >/dev/null' 2>/dev/null | " + kOffwake + " convert -i - -o " + dir.file("offwake.data"));
  ASSERT_EQ(c.status, 0) << c.err;
  RunResult script = run(std::string(kDebianPerf) + " script " + kPerfScriptFields + " -i " + dir.file("offwake.data"));
  ASSERT_EQ(script.status, 0) << script.err;
  EXPECT_NE(script.out.find("wl_wait_for_message"), std::string::npos);
}

// ---- what a recording lacks, and broken input ----

struct Refusal {
  int status;
  std::string err;
};

Refusal convert_stock(const TempDir& dir, const std::string& perf_args) {
  RunResult rec = stock_record("-B -o " + dir.file("stock.data") + perf_args + " -- " + kWorkloads + "wl_pipe -n 2");
  EXPECT_EQ(rec.status, 0) << rec.err;
  RunResult c = run(kOffwake + " convert -i " + dir.file("stock.data") + " -o " + dir.file("out.data"));
  return {c.status, c.err};
}

void expect_refused(const Refusal& r, const std::string& says) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

// A file found by the fuzz target: its sched_switch format text crashes libtraceevent's parser
// (Debian's 1.7.1). The formats are tried in a child process first: one line, exit 1.
TEST(ConvertRefuses, FormatThatCrashesLibtraceevent) {
  TempDir dir;
  auto r = run(kOffwake + " convert -i " OFFWAKE_SOURCE_DIR "/tests/e2e/data/libtraceevent_crash.data -o " +
               dir.file("out.data"));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("libtraceevent crashed parsing the sched tracepoint formats"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(ConvertRefuses, NoCallchains) {
  TempDir dir;
  expect_refused(convert_stock(dir, kSchedEvents + "--switch-events"), "record with -g");
}

TEST(ConvertRefuses, NoWakingEvent) {
  TempDir dir;
  expect_refused(convert_stock(dir, " -e sched:sched_switch --switch-events -g"), "no sched:sched_waking event");
}

TEST(ConvertRefuses, NoSwitchEvent) {
  TempDir dir;
  expect_refused(convert_stock(dir, " -e sched:sched_waking --switch-events -g"), "no sched:sched_switch event");
}

TEST(ConvertRefuses, PerTaskWithoutSwitchEvents) {
  TempDir dir;
  expect_refused(convert_stock(dir, kSchedEvents + "-g"), "record with --switch-events");
}

// perf record -W adds a weight to each sample, which the reader does not decode (unsupported,
// not broken): the error says how to record instead. (--call-graph dwarf's registers and stack
// copies are read: dwarf_unwind_test.cpp.)
TEST(ConvertRefuses, WeightSaysHowToRecord) {
  TempDir dir;
  Refusal r = convert_stock(dir, kSchedEvents + "--switch-events -g -W");
  expect_refused(r, "is not supported: convert reads what perf record -e sched:sched_switch -e sched:sched_waking -g "
                    "(or --call-graph dwarf) records: record without -W");
}

TEST(ConvertRefuses, NotPerfData) {
  TempDir dir;
  run("echo hello > " + dir.file("text"));
  RunResult c = run(kOffwake + " convert -i " + dir.file("text") + " -o " + dir.file("out.data"));
  expect_refused({c.status, c.err}, "not a perf.data file");
  EXPECT_EQ(c.err.find("record without"), std::string::npos) << "broken input, not a way of recording: " << c.err;
}

TEST(ConvertRefuses, MissingOutputIsUsage) {
  RunResult c = run(kOffwake + " convert -i perf.data");
  EXPECT_EQ(c.status, 129);
  EXPECT_NE(c.err.find("-o"), std::string::npos) << c.err;
}

// Cut anywhere: an error, and no output file.
TEST(ConvertRefuses, TruncatedFile) {
  TempDir dir;
  RunResult rec = stock_record("-B -o " + dir.file("stock.data") + kPerTask + " -- " + kWorkloads + "wl_pipe -n 2");
  ASSERT_EQ(rec.status, 0);
  const std::string full = read_file(dir.file("stock.data"));
  for (size_t n : {full.size() / 2, full.size() - 1, size_t{200}, size_t{8}}) {
    std::ofstream(dir.file("cut.data"), std::ios::binary).write(full.data(), static_cast<std::streamsize>(n));
    RunResult c = run(kOffwake + " convert -i " + dir.file("cut.data") + " -o " + dir.file("out.data"));
    EXPECT_EQ(c.status, 1) << "cut at " << n << ": " << c.err;
    EXPECT_NE(c.err.find("perf offwake convert: "), std::string::npos) << c.err;
    EXPECT_EQ(c.err.find("record without"), std::string::npos) << "broken input, not a way of recording: " << c.err;
    struct stat st {};
    EXPECT_NE(stat(dir.file("out.data").c_str(), &st), 0) << "no output from a failed conversion";
  }
}

// Renames every "prev_state" in the file's sched_switch format (the same length): a format
// the decoder does not know.
TEST(ConvertRefuses, UnknownTracepointFormat) {
  TempDir dir;
  RunResult rec = stock_record("-B -o " + dir.file("stock.data") + kPerTask + " -- " + kWorkloads + "wl_pipe -n 2");
  ASSERT_EQ(rec.status, 0);
  std::string bytes = read_file(dir.file("stock.data"));
  size_t renamed = 0;
  for (size_t at = bytes.find("prev_state"); at != std::string::npos; at = bytes.find("prev_state", at + 1)) {
    bytes.replace(at, 10, "prev_st8te");
    ++renamed;
  }
  ASSERT_GT(renamed, 0u);
  std::ofstream(dir.file("odd.data"), std::ios::binary) << bytes;
  RunResult c = run(kOffwake + " convert -i " + dir.file("odd.data") + " -o " + dir.file("out.data"));
  expect_refused({c.status, c.err}, "tracepoint format");
}

// A stream whose every record is its own round, with the last scheduler sample dated before
// the first: perf's ordering cannot put it right, and a block would end before it began.
TEST(ConvertRefuses, RecordsOutOfOrder) {
  TempDir dir;
  RunResult rec = run(std::string(kDebianPerf) + " record -q -o -" + kPerTask + " -- bash -c 'exec " + kWorkloads +
                      "wl_pipe -n 3 >/dev/null' 2>/dev/null > " + dir.file("stream.data"));
  ASSERT_EQ(rec.status, 0);
  const std::string in = read_file(dir.file("stream.data"));
  ASSERT_GT(in.size(), 16u);
  std::string out = in.substr(0, 16);
  const char round[8] = {68, 0, 0, 0, 0, 0, 8, 0};  // PERF_RECORD_FINISHED_ROUND
  size_t last_sample = std::string::npos, pos = 16;
  bool in_data = false;
  while (pos + 8 <= in.size()) {
    uint32_t type;
    uint16_t size;
    std::memcpy(&type, in.data() + pos, 4);
    std::memcpy(&size, in.data() + pos + 6, 2);
    ASSERT_GE(size, 8);
    size_t whole = size;
    if (type == 66) {  // tracing data: its bytes follow the record
      uint32_t n;
      std::memcpy(&n, in.data() + pos + 8, 4);
      whole += n;
    }
    if (type == 9) {
      last_sample = out.size();
      in_data = true;
    }
    out += in.substr(pos, whole);
    if (in_data && type < 64) out.append(round, sizeof round);
    pos += whole;
  }
  ASSERT_NE(last_sample, std::string::npos);
  // sample_type IP|TID|TIME|...: the time after the header, the ip and pid/tid.
  const uint64_t ancient = 1;
  out.replace(last_sample + 8 + 8 + 8, 8, reinterpret_cast<const char*>(&ancient), 8);
  std::ofstream(dir.file("shuffled.data"), std::ios::binary) << out;
  RunResult c = run(kOffwake + " convert -i - -o " + dir.file("out.data") + " < " + dir.file("shuffled.data"));
  expect_refused({c.status, c.err}, "out of order");
}

}  // namespace
}  // namespace offwake::test
