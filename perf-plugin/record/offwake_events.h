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
constexpr const char* kOffwakeWakerEvent = "offwake-waker";

struct OffwakeEventIds {
  uint64_t time = 0;
  uint64_t waker = 0;
};

std::vector<perfdata::EventDesc> offwake_events(OffwakeEventIds ids);

// Ids above every kernel-assigned id of `others`, so the two cannot collide.
OffwakeEventIds pick_event_ids(const std::vector<perfdata::EventDesc>& others);

}  // namespace offwake
