// What every writer of an offwake recording (perf offwake record, perf offwake convert) puts
// around its samples, in one place: the pseudo-threads' names, the blocks lost and the
// counters at the end, and the previous output moved aside at the start.
#pragma once

#include <cstdint>
#include <string>

#include "perfdata/writer.h"
#include "samples/aggregate_samples.h"
#include "samples/offwake_events.h"
#include "samples/record_stats.h"
#include "util/result.h"

namespace offwake {

// COMM records for the pseudo-threads of wakers that are not threads ("[hardirq]", ...):
// one, or all of them.
Status write_pseudo_waker_comm(perfdata::PerfDataWriter& w, const OffwakeEventIds& ids, const PseudoWaker& p);
Status write_pseudo_waker_comms(perfdata::PerfDataWriter& w, const OffwakeEventIds& ids);

// The pseudo-thread whose tid this is, or nullptr for a real thread.
const PseudoWaker* pseudo_waker_of_tid(uint32_t tid);

// At the end: blocks that never became a sample as a LOST_SAMPLES record of offwake-time
// (stamped `time`), and in a file the counters as our feature section.
Status write_losses_and_stats(perfdata::PerfDataWriter& w, const OffwakeEventIds& ids, const RecordStats& stats,
                              uint64_t time);

// Whether `path` exists.
bool path_exists(const std::string& path);

// An existing `output` (not "-") becomes output.old, as perf record does.
Status move_old_output(const std::string& output);

// --state letters (S, D, I) into OFFWAKE_WANT_* bits.
Result<uint32_t> parse_state_letters(const std::string& letters);

}  // namespace offwake
