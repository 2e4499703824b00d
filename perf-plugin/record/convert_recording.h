// A recording made by stock perf,
//   perf record -e sched:sched_switch -e sched:sched_waking -g -a             (system-wide), or
//   perf record -e sched:sched_switch -e sched:sched_waking --switch-events -g -- cmd  (per task),
// made into what perf offwake record writes (perf offwake convert). The tracepoints' raw
// fields are decoded with libtraceevent from the file's own TRACING_DATA; the records go in
// time order (perf's two-round window) to the same BlockPairer as the live tracepoint back
// end, and its aggregates through the same BlockWriter. Threads, mappings and build ids are
// carried over, so that user frames still symbolize.
//
// Per task, sched_switch fires only when a traced task is switched out; its switch-in comes
// from the PERF_RECORD_SWITCH records --switch-events adds.
#pragma once

#include <string>
#include <vector>

#include "samples/record_stats.h"
#include "util/result.h"

namespace offwake {

// How to make a recording convert takes, for messages.
constexpr const char* kConvertRecipe = "perf record -e sched:sched_switch -e sched:sched_waking -g";

struct ConvertOptions {
  std::string input = "perf.data", output;  // "-": standard input, a pipe
  std::string state = "SDI";
  double min_block_us = 0, max_block_us = 0;
  double sample_period_us = 0;  // --sample-period: time-weighted sampling; 0: every block
  bool sched_frames = false;
  bool quiet = false;
  // Frames unwound from a user stack copy at most (perf's default --max-stack).
  uint32_t max_stack = 127;
};

struct ConvertOutcome {
  RecordStats stats;
  // What the user should know about the result (kept frames, missing symbols).
  std::vector<std::string> notes;
};

// Reads o.input and writes o.output; `argv` is the command line stored in the file.
Result<ConvertOutcome> convert_recording(const ConvertOptions& o, const std::vector<std::string>& argv);

}  // namespace offwake
