// What a recording saw and what it lost, printed at the end and stored in perf.data.
#pragma once

#include <cstdio>
#include <string>

#include "offwake.h"
#include "perfdata/bytes.h"

namespace offwake {

// Our own feature section (a perf_header_string_list of "key=value"). A bit far above perf's
// features: perf reads past feature bits it does not know.
constexpr int kFeatOffwakeStats = 255;

struct RecordStats {
  uint64_t duration_ns = 0;
  uint64_t keys = 0;          // aggregates written (one offwake-time + one offwake-waker sample each)
  uint64_t timeline_events = 0;  // --timeline: blocks written as their own samples
  uint64_t blocked_ns = 0;    // summed over them
  offwake_counters counters{};
  uint64_t recursion_misses = 0;      // BPF program runs the kernel skipped
  uint64_t kernel_lookup_failed = 0;  // stack ids whose entries could not be read back
  uint64_t user_lookup_failed = 0;
  uint64_t tracking_undecodable = 0;  // ring-buffer records of unknown type
  uint64_t on_cpu_samples = 0;        // --on-cpu samples written
  uint64_t perf_lost = 0;             // records the kernel dropped from perf ring buffers (LOST)
  uint64_t bytes = 0;
  std::string output;

  // Blocks that did not become samples.
  uint64_t lost_blocks() const;
  perfdata::Bytes encode() const;
  // key=value lines, as stored.
  std::vector<std::pair<std::string, uint64_t>> fields() const;
};

void print_record_summary(FILE* out, const RecordStats& s);

}  // namespace offwake
