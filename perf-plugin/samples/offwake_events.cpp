#include "samples/offwake_events.h"

#include <time.h>

#include <algorithm>

#include "offwake.h"

namespace offwake {

static perfdata::EventDesc sample_event(const char* name, uint64_t id) {
  perfdata::EventDesc e;
  e.attr.type = PERF_TYPE_SOFTWARE;
  e.attr.config = PERF_COUNT_SW_BPF_OUTPUT;
  e.attr.size = sizeof e.attr;
  e.attr.sample_period = 1;
  e.attr.sample_type =
      perfdata::kSampleIdLayout | PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP;
  e.attr.sample_id_all = 1;
  e.attr.use_clockid = 1;
  e.attr.clockid = CLOCK_MONOTONIC;
  e.name = name;
  e.ids = {id};
  return e;
}

std::vector<perfdata::EventDesc> offwake_events(OffwakeEventIds ids) {
  perfdata::EventDesc time = sample_event(kOffwakeTimeEvent, ids.time);
  time.attr.sample_type |= PERF_SAMPLE_RAW;
  std::vector<perfdata::EventDesc> events = {time, sample_event(kOffwakeWakerEvent, ids.waker)};
  if (ids.hop_blocked) {
    events.push_back(sample_event(kOffwakeHopBlockedEvent, ids.hop_blocked));
    events.push_back(sample_event(kOffwakeHopWakerEvent, ids.hop_waker));
  }
  return events;
}

Status check_offwake_recording(const std::vector<perfdata::EventDesc>& events, const std::string& input) {
  const auto named = [&](const char* name) {
    return std::any_of(events.begin(), events.end(), [&](const perfdata::EventDesc& e) { return e.name == name; });
  };
  if (named(kOffwakeTimeEvent)) return ok_status();
  const std::string what = input == "-" ? "standard input" : input;
  // Their samples (a period of 1 each) would read as on-CPU nanoseconds.
  if (named("sched:sched_switch"))
    return Error::usage(what + " holds the scheduler tracepoints, not blocked time: make it a recording of perf offwake "
                                "with 'perf offwake convert -i " + input + " -o OUT' and read OUT");
  return Error::usage(what + " is not a perf offwake recording (it has none of the offwake events): make one with "
                              "'perf offwake record', or with 'perf offwake convert' from a recording of the "
                              "scheduler tracepoints");
}

OffwakeEventIds pick_event_ids(const std::vector<perfdata::EventDesc>& others, bool chain) {
  uint64_t top = 0;
  for (const auto& e : others)
    for (uint64_t id : e.ids) top = std::max(top, id);
  // Far above anything the kernel hands out during one recording.
  uint64_t base = top + (uint64_t{1} << 32);
  if (!chain) return {base, base + 1};
  return {base, base + 1, base + 2, base + 3};
}

const char* offwake_chain_end_name(uint32_t end) {
  switch (end) {
    case OFFWAKE_CHAIN_END_DEPTH: return "depth";
    case OFFWAKE_CHAIN_END_IRQ: return "interrupt";
    case OFFWAKE_CHAIN_END_KTHREAD: return "kthread";
    case OFFWAKE_CHAIN_END_UNSEEN: return "unseen";
    case OFFWAKE_CHAIN_END_NOT_KEPT: return "not-kept";
    case OFFWAKE_CHAIN_END_NO_WAKER: return "no-waker";
    default: return "";
  }
}

const char* offwake_state_letters(uint32_t state) {
  // TASK_IDLE is D|NOLOAD: an idle kernel thread's wait, "I" as ps and --state call it.
  if ((state & (OFFWAKE_STATE_UNINTERRUPTIBLE | OFFWAKE_STATE_NOLOAD)) ==
      (OFFWAKE_STATE_UNINTERRUPTIBLE | OFFWAKE_STATE_NOLOAD))
    return "I";
  if (state & 0x2) return "D";
  if (state & 0x1) return "S";
  return "R";
}

const char* offwake_waker_context(uint32_t flags) {
  if (flags & OFFWAKE_WAKER_STILL_BLOCKED) return "still-blocked";
  if (flags & OFFWAKE_WAKER_NONE) return "none";
  if (flags & OFFWAKE_WAKER_NMI) return "nmi";
  if (flags & OFFWAKE_WAKER_HARDIRQ) return "hardirq";
  if (flags & OFFWAKE_WAKER_SOFTIRQ) return "softirq";
  // A thread, in a softirq it ran itself (loopback networking: the sender).
  if (flags & OFFWAKE_WAKER_OWN_SOFTIRQ) return "own-softirq";
  // A thread named without its stacks (woken before --min-block).
  if (offwake_waker_stacks_not_taken(flags)) return "early";
  return "thread";
}

bool offwake_waker_stacks_not_taken(uint32_t flags) { return flags & OFFWAKE_WAKER_EARLY; }

}  // namespace offwake
