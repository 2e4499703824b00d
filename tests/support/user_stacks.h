// User stacks of one run as two recorders saw them: perf offwake record's samples, and the
// stacks Debian's perf unwinds with DWARF (`perf record --call-graph dwarf`) at the same
// switch-outs and wakeups. Both are read with perf script and compared frame by frame, by
// symbol, weighted by the blocked time of our samples (their period).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace offwake::test {

// The perf script fields the comparison reads: perf's tracepoint fields, and each frame's DSO.
inline constexpr const char* kOffwakeStackFields = "--no-inline --max-stack 255 -F comm,pid,tid,period,event,ip,sym,dso";
inline constexpr const char* kDwarfStackFields = "--no-inline --max-stack 255 -F comm,pid,tid,event,trace,ip,sym,dso";

struct StackFrame {
  uint64_t ip = 0;  // as perf script prints it: relative to its DSO for user frames
  std::string sym, dso;
  bool operator<(const StackFrame& o) const { return std::tie(ip, sym, dso) < std::tie(o.ip, o.sym, o.dso); }
};
// Two frames are one if they name the same symbol (not "[unknown]") in the same DSO, or are at
// the same address in it give or take one byte. perf gives a caller's frame at the return
// address less one (the call instruction), perf script ours at the return address: where a
// frame has no name (a stripped binary's static function), or where the two addresses fall in
// two symbols (a signal trampoline, whose return address less one is outside it; a call to a
// function that does not return, last in its caller), the address says it is the same frame.
bool same_frame(const StackFrame& a, const StackFrame& b);
using UserStack = std::vector<StackFrame>;  // leaf first
bool same_stack(const UserStack& a, const UserStack& b);
// "sym;sym;..." leaf first, for messages.
std::string describe(const UserStack& s, size_t max_frames = 200);

// One sample of a perf script that printed the fields above.
struct StackSample {
  std::string comm, event;
  uint32_t pid = 0, tid = 0;
  uint64_t period = 0;
  std::map<std::string, std::string> fields;  // a tracepoint's, "prev_pid=123" -> prev_pid: 123
  UserStack user;                             // its user frames, leaf first
  size_t kernel_frames = 0;
};
std::vector<StackSample> parse_stack_samples(const std::string& perf_script);

// Whether a user stack goes down to where its thread began: main (or the C library's start
// of the process) or start_thread, the C library's start of a thread.
bool reaches_thread_start(const UserStack& s);

// perf's DWARF-unwound user stacks: at each switch-out of a thread that blocked (sched_switch,
// prev_state S, D or I), and at each wakeup (sched_waking), by the waker's and the wakee's tid.
struct DwarfStacks {
  std::map<uint32_t, std::vector<UserStack>> blocked;                         // by tid
  std::map<std::pair<uint32_t, uint32_t>, std::vector<UserStack>> wakeups;    // by (waker, wakee)
  std::map<uint32_t, uint32_t> process_of;                                    // tid -> pid
  size_t switch_outs = 0, wakeup_samples = 0;
};
DwarfStacks dwarf_stacks(const std::vector<StackSample>& perf_samples);
// Does `stack` equal one of `stacks`?
bool among(const UserStack& stack, const std::vector<UserStack>& stacks);

// How much of our blocked time (the periods of offwake-time samples) has user stacks that equal
// one perf unwound for the same thread, for the blocked thread and for its waker.
struct StackAgreement {
  uint64_t blocked_ns = 0;           // our blocked time of the threads compared
  uint64_t blocked_equal_ns = 0;     // ... whose blocked user stack equals one of perf's
  uint64_t blocked_complete_ns = 0;  // ... and reaches the thread's start
  // Wakers: the same time, by the waker sample that follows each blocked one.
  uint64_t interrupt_waker_ns = 0;     // woken by an interrupt or no thread: no user stack
  uint64_t no_user_context_ns = 0;     // woken by a thread perf saw without user stack (exiting)
  uint64_t unseen_waker_ns = 0;        // woken by a thread perf never saw wake this one (lost)
  uint64_t thread_waker_ns = 0;        // woken by a thread that had a user stack, per perf
  uint64_t waker_equal_ns = 0;         // ... whose waker user stack equals one of perf's
  uint64_t waker_complete_ns = 0;      // ... and reaches the waker's start
  // Of thread_waker_ns, where none of perf's stacks of that wakeup reaches the waker's start
  // (perf's copy of the stack failed it: wrk's sends in a softirq, now and then), and ours does.
  uint64_t waker_perf_incomplete_ns = 0, waker_complete_beyond_perf_ns = 0;
  uint64_t samples = 0;
  std::vector<std::string> blocked_misses, waker_misses;  // the largest few, for the messages

  double blocked_equal_share() const;
  double blocked_complete_share() const;
  double waker_complete_share() const;  // of thread_waker_ns
  // Also counting, where perf's reference failed, ours reaching the waker's start.
  double waker_complete_share_beyond_perf() const;
  std::string summary() const;
};

// Our offwake-time samples of the threads `compared` (by pid: a process's every thread),
// each with the offwake-waker sample after it, against perf's stacks.
StackAgreement compare_stacks(const std::vector<StackSample>& ours, const DwarfStacks& perf,
                              const std::set<uint32_t>& compared_pids);

// Records the agreement as test properties (name_*), to watch the figures over runs.
void record_agreement(const std::string& name, const StackAgreement& a);

}  // namespace offwake::test
