// Parses what the real `perf script -F comm,pid,tid,period,event,ip,sym` prints (also with
// `time` after `tid`). The lines the test workloads print about themselves are support/truth.h's.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace offwake::test {

// The fields `perf script` is asked for by kPerfScriptFields.
inline constexpr const char* kPerfScriptFields = "-F comm,pid,tid,period,event,ip,sym";

struct ScriptFrame {
  uint64_t ip = 0;
  std::string sym;
  bool kernel() const { return ip >= 0xffff800000000000ull; }
};

// With `time` among the fields, and --ns.
inline constexpr const char* kPerfScriptTimedFields = "-F comm,pid,tid,time,period,event,ip,sym --ns";

struct ScriptSample {
  std::string comm;
  uint32_t pid = 0, tid = 0;
  bool has_time = false;
  uint64_t time_ns = 0;  // perf's "SECONDS.NANOSECONDS:", as nanoseconds
  uint64_t period = 0;
  std::string event;
  std::vector<ScriptFrame> frames;  // leaf first
  // An offwake-time sample's number of blocks, from its raw payload (add_block_counts()).
  bool has_blocks = false;
  uint64_t blocks = 0;
  bool has_frame(const std::string& sym) const;
  bool has_user_frames() const;
  bool has_kernel_frames() const;
  const ScriptFrame* user_leaf() const;  // the first user frame, or nullptr
};

std::vector<ScriptSample> parse_perf_script(const std::string& text);

// Gives each offwake-time sample of `samples`, parsed from a perf script of `data`, its number
// of blocks from its raw payload, decoded by Debian perf's own Python (raw_blocks() of
// support/raw_blocks.h), matched by thread and period in order. A sample that the script did
// not print, or one it printed that is not among `samples`, is a test failure.
void add_block_counts(std::vector<ScriptSample>& samples, const std::string& data);

// Debian's perf is 6.1. perf 6.12, a second reader, is built by scripts/build-perf612.sh into
// the deps prefix (OFFWAKE_DEPS_PREFIX); `make -f Makefile.perf test` builds it first.
inline constexpr const char* kDebianPerf = "/usr/bin/perf";
std::string perf612_path();

// "N blocks without a waker" from perf offwake record's summary: wakeups the kernel never
// traced (see late_ends in bpf-progs/offwake.bpf.c). Those blocks are kept, with the waker
// "[no waker seen]"; tests accept that many and no more.
uint64_t blocks_without_waker(const std::string& record_stderr);
// "N ended late": blocks whose switch-in was never traced; their kernel stack is not taken.
uint64_t blocks_ended_late(const std::string& record_stderr);
// The number before `tail` in the summary, 0 if absent.
uint64_t summary_count(const std::string& record_stderr, const std::string& tail);

}  // namespace offwake::test
