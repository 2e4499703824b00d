// Which blocks a recording keeps: one set of filters on the blocked thread (wakers are never
// filtered) that both back ends take, the BPF programs (bpf::LoaderOptions) and the
// tracepoints paired in user space (sched::PairerOptions), so that an option means the same
// whichever records.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "offwake.h"

namespace offwake {

struct BlockFilters {
  std::set<uint32_t> tgids;          // -p (or a command): only these processes; empty: all
  bool follow_forks = false;         // children of `tgids` join them (a followed command)
  std::set<uint32_t> tids;           // -t: only these threads; empty: all
  bool user_threads_only = false;    // -u
  bool kernel_threads_only = false;  // --kernel-threads-only
  uint32_t state_mask = OFFWAKE_WANT_S | OFFWAKE_WANT_D | OFFWAKE_WANT_I;  // --state
  uint64_t min_block_ns = 0;         // --min-block
  uint64_t max_block_ns = 0;         // --max-block; 0: no limit
  uint64_t sample_period_ns = 0;     // --sample-period: time-weighted sampling (block_rules.h); 0: off
};

// --min-block, --max-block and --sample-period as given (microseconds; 0: off): why they are
// not valid, or "" if they are.
std::string durations_error(double min_us, double max_us, double sample_period_us);
// ... and into `f`, in nanoseconds (valid ones).
void set_durations(BlockFilters& f, double min_us, double max_us, double sample_period_us);

}  // namespace offwake
