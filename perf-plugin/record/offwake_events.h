// The two events our samples belong to, as they appear in perf.data:
//   offwake-time   pid/tid/comm of the blocked thread, its kernel+user callchain,
//                  period = nanoseconds blocked
//   offwake-waker  the waker's pid/tid and its kernel+user callchain, same period; it
//                  immediately follows the offwake-time sample it belongs to.
// Both are software BPF_OUTPUT events, as perf's own off-CPU samples are.
#pragma once

#include <vector>

#include "perfdata/records.h"

namespace offwake {

constexpr const char* kOffwakeTimeEvent = "offwake-time";

// The PERF_SAMPLE_RAW payload of an offwake-time sample: what the aggregate knows beyond the
// period. perf script prints it as "BPF output"; our readers decode it.
struct OffwakeRaw {
  uint32_t version = 1;
  uint32_t state = 0;        // task state at switch-out (S = 0x1, D = 0x2, plus modifiers)
  uint64_t count = 0;        // blocks summed in this sample
  uint64_t max_ns = 0;       // the longest of them
  uint32_t waker_flags = 0;  // OFFWAKE_WAKER_* (hardirq, softirq, nmi, none, kthread)
  uint32_t reserved = 0;
};
static_assert(sizeof(OffwakeRaw) == 32);
constexpr const char* kOffwakeWakerEvent = "offwake-waker";

struct OffwakeEventIds {
  uint64_t time = 0;
  uint64_t waker = 0;
};

std::vector<perfdata::EventDesc> offwake_events(OffwakeEventIds ids);

// The state a thread blocked in, as ps and --state name it: "S", "D", "I" (TASK_IDLE), "R".
const char* offwake_state_letters(uint32_t state);
// What woke a block, from OffwakeRaw::waker_flags: "thread", "hardirq", "softirq", "nmi",
// "none" (no wakeup seen), "early" (woken before --min-block), "still-blocked".
const char* offwake_waker_context(uint32_t waker_flags);

// Ids above every kernel-assigned id of `others`, so the two cannot collide.
OffwakeEventIds pick_event_ids(const std::vector<perfdata::EventDesc>& others);

}  // namespace offwake
