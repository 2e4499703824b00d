// A scheduler tracepoint record, decoded: what the tracepoint back end (perf offwake record
// --backend tracepoint) and perf offwake convert feed to BlockPairer. Filled from a perf
// sample of sched:sched_switch or sched:sched_waking (its pid/tid/time/cpu and callchain) and
// the tracepoint's raw fields, decoded by SchedDecoder with libtraceevent.
#pragma once

#include <cstdint>
#include <string>

#include "callchain/callchain.h"
#include "callchain/user_stack.h"

namespace offwake::sched {

enum class SchedKind : uint8_t { kSwitch, kWaking };

struct SchedEvent {
  SchedKind kind = SchedKind::kSwitch;
  uint64_t time = 0;  // CLOCK_MONOTONIC ns (perf's sample time with use_clockid)
  uint32_t cpu = 0;
  // The task current when the tracepoint fired (the sample's pid/tid): at a switch the
  // task switched out (prev), at a waking the waker (or the task an interrupt interrupted).
  uint32_t pid = 0, tid = 0;
  // The current task's stack, kernel then user, as the sample's callchain: at a switch the
  // stack prev blocked in, at a waking the waker's.
  Callchain callchain;
  // With --call-graph dwarf: the current task's user registers and stack copy, which
  // PairerOptions::complete_stack unwinds into the callchain's user frames for the stacks
  // the pairer keeps. The callchain then holds the kernel's frames only.
  UserStackDump user_stack;
  // The current task's cgroup v2 id (PERF_SAMPLE_CGROUP), 0 when the recording has none: at a
  // switch the cgroup prev blocks in, at a waking the waker's (an interrupted task's in
  // interrupt context, which the pairer leaves out).
  uint64_t cgroup = 0;

  // sched_switch
  uint32_t prev_tid = 0, next_tid = 0;
  // prev_state as offwake's task states (bpf-progs/offwake.h): OFFWAKE_STATE_INTERRUPTIBLE,
  // OFFWAKE_STATE_UNINTERRUPTIBLE, UNINTERRUPTIBLE|NOLOAD for "I" (TASK_IDLE); 0 when prev was
  // preempted or is still runnable ("R", "R+"), and any other state (stopped, dead, ...) as
  // 0x4 and above.
  uint32_t prev_state = 0;
  std::string prev_comm, next_comm;

  // sched_waking
  uint32_t target_tid = 0;
  std::string target_comm;
  // OFFWAKE_WAKER_HARDIRQ / _SOFTIRQ / _NMI from the record's common_flags when the waking ran
  // in interrupt context; 0 in task context.
  uint32_t irq = 0;
};

// Whether a switch-out in `prev_state` (SchedEvent::prev_state) starts a block: S, D or I.
inline bool state_is_block(uint32_t prev_state) { return (prev_state & 0x3) != 0; }

}  // namespace offwake::sched
