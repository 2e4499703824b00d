// The events our samples belong to, as they appear in perf.data:
//   offwake-time         pid/tid/comm of the blocked thread, its kernel+user callchain,
//                        period = nanoseconds blocked
//   offwake-waker        hop 1: the waker's pid/tid and its kernel+user callchain, same period;
//                        it immediately follows the offwake-time sample it belongs to.
// With --chain-depth N > 1 (only then are these two events in the file), each further hop
// k = 2 .. N that was recorded follows as two samples, same time and period:
//   offwake-hop-blocked  the previous hop's waker (pid/tid): its latest block before that
//                        wakeup, kernel+user callchain
//   offwake-hop-waker    who woke that block (pid/tid, a pseudo-thread for an interrupt or an
//                        unknown waker as for offwake-waker): its callchain at the wakeup
// The offwake-time sample's raw data (samples/offwake_raw.h) says how many hop pairs follow
// and why the chain ends.
// All are software BPF_OUTPUT events, as perf's own off-CPU samples are.
#pragma once

#include <string>
#include <vector>

#include "perfdata/records.h"
#include "samples/offwake_raw.h"
#include "util/result.h"

namespace offwake {

constexpr const char* kOffwakeTimeEvent = "offwake-time";

constexpr const char* kOffwakeWakerEvent = "offwake-waker";
constexpr const char* kOffwakeHopBlockedEvent = "offwake-hop-blocked";
constexpr const char* kOffwakeHopWakerEvent = "offwake-hop-waker";

struct OffwakeEventIds {
  uint64_t time = 0;
  uint64_t waker = 0;
  uint64_t hop_blocked = 0;  // 0: no chain events (--chain-depth 1)
  uint64_t hop_waker = 0;
};

// The event descriptions; the two hop events only when `ids` has them.
std::vector<perfdata::EventDesc> offwake_events(OffwakeEventIds ids);

// Why a chain ends, as scripts and reports name it: "" (no chain recorded), "depth",
// "interrupt", "kthread", "unseen", "not-kept", "no-waker".
const char* offwake_chain_end_name(uint32_t end);

// The state a thread blocked in, as ps and --state name it: "S", "D", "I" (TASK_IDLE), "R".
const char* offwake_state_letters(uint32_t state);
// What woke a block, from OffwakeRaw::waker_flags: "thread", "hardirq", "softirq", "nmi",
// "own-softirq" (a thread, in a softirq it ran itself), "none" (no wakeup seen), "early" (a thread that woke it before --min-block, named without
// its stacks; an interrupt then is its context), "still-blocked".
const char* offwake_waker_context(uint32_t waker_flags);
// Whether the waker, thread or interrupt, was named without its stacks: it woke the block
// before --min-block or its --sample-period threshold.
bool offwake_waker_stacks_not_taken(uint32_t waker_flags);

// Whether a recording's `events` are perf offwake's (it has offwake-time), for the readers
// to refuse any other with the way to make one of it: a recording of the scheduler
// tracepoints is converted (perf offwake convert), anything else recorded anew. `input` is
// the recording as given to -i ("-": standard input).
Status check_offwake_recording(const std::vector<perfdata::EventDesc>& events, const std::string& input);

// Ids above every kernel-assigned id of `others`, so the two cannot collide; the hop events'
// ids too with `chain`.
OffwakeEventIds pick_event_ids(const std::vector<perfdata::EventDesc>& others, bool chain = false);

}  // namespace offwake
