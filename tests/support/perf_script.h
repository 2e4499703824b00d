// Parses what the real `perf script -F comm,pid,tid,period,event,ip,sym` prints, and the
// "truth" lines the test workloads print about themselves.
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

struct ScriptSample {
  std::string comm;
  uint32_t pid = 0, tid = 0;
  uint64_t period = 0;
  std::string event;
  std::vector<ScriptFrame> frames;  // leaf first
  bool has_frame(const std::string& sym) const;
  bool has_user_frames() const;
  bool has_kernel_frames() const;
};

std::vector<ScriptSample> parse_perf_script(const std::string& text);

// "truth tid=... function=... blocked_ns=... count=... waker_tid=... waker_function=..."
struct Truth {
  uint32_t tid = 0, waker_tid = 0;
  std::string function, waker_function;
  uint64_t blocked_ns = 0, count = 0;
};
std::vector<Truth> parse_truth(const std::string& text);

// "N blocks without a waker" from perf offwake record's summary: wakeups the kernel never
// traced (see late_ends in bpf-progs/offwake.bpf.c). Those blocks are kept, with the waker
// "[no waker seen]"; tests accept that many and no more.
uint64_t blocks_without_waker(const std::string& record_stderr);
// "N ended late": blocks whose switch-in was never traced; their kernel stack is not taken.
uint64_t blocks_ended_late(const std::string& record_stderr);
// The number before `tail` in the summary, 0 if absent.
uint64_t summary_count(const std::string& record_stderr, const std::string& tail);

}  // namespace offwake::test
