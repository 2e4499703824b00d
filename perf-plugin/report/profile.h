// A recording as the report outputs see it: every sample of a perf.data file or stream,
// symbolized, off-CPU samples paired with their wakers, identical stacks summed. Readers
// (the table, folded stacks, the flame graph, pprof) only format a Profile.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfdata/features.h"
#include "report/sample_filter.h"
#include "util/result.h"

namespace offwake::report {

struct Frame {
  std::string name;     // symbol, or "[unknown]"
  std::string dso;      // "[kernel.kallsyms]", a file path, or "[unknown]"
  uint64_t ip = 0;      // the first address seen for this frame
  uint64_t dso_addr = 0;  // ip in the DSO's address space (file offset for user code)
  bool kernel = false;
  auto operator<=>(const Frame& o) const {  // identity: what perf report would merge
    return std::tie(name, dso, kernel) <=> std::tie(o.name, o.dso, o.kernel);
  }
  bool operator==(const Frame& o) const { return name == o.name && dso == o.dso && kernel == o.kernel; }
};

struct Thread {
  std::string comm;  // as perf shows it (":TID" when the file never named the thread)
  uint32_t pid = 0, tid = 0;
  auto operator<=>(const Thread&) const = default;
};

enum class Kind { kOffCpu, kOnCpu };

// Hop k >= 2 of a wakeup chain (perf offwake record --chain-depth): the previous hop's waker,
// in its latest block before that wakeup, and the thread that woke that block.
struct Hop {
  Thread thread;                // the blocked thread: the previous hop's waker
  std::vector<Frame> frames;    // its stack in that block, leaf first
  std::string state;            // "S", "D", "I"; "" if the raw data does not say
  std::optional<Thread> waker;  // none: the recording ends before this hop's waker sample
  std::vector<Frame> waker_frames;  // leaf first
  std::string waker_context;        // as Stack::waker_context; "" if the raw data does not say
  bool waker_stacks_not_taken = false;  // as Stack's
  auto operator<=>(const Hop&) const = default;
};

// One stack with its summed time. Off-CPU: the blocked thread and its stack, and the thread
// that woke it with its stack (pseudo threads such as "[hardirq]" are threads here too). On-CPU
// (perf offwake record --on-cpu): the sampled thread and stack; no waker.
struct Stack {
  Kind kind = Kind::kOffCpu;
  Thread thread;
  std::vector<Frame> frames;  // leaf first, as in a callchain
  std::string state;          // "S", "D", "I"; "" on-CPU
  // The cgroup of the blocked (or sampled) thread, as its path (report/cgroups.h): "" when
  // the sample has none.
  std::string cgroup;
  std::optional<Thread> waker;  // none: no offwake-waker sample followed the blocked one
  std::string waker_cgroup;     // the waker's at the wakeup; "" for an interrupt, or unknown
  std::vector<Frame> waker_frames;  // leaf first
  std::string waker_context;  // "thread", "hardirq", "softirq", "nmi", "none", "early",
                              // "still-blocked"; "" on-CPU or without a waker sample
  // The waker was named but its stacks not taken: it woke the thread before the block reached
  // --min-block or its --sample-period threshold, which it passed on the run queue after.
  bool waker_stacks_not_taken = false;
  // The rest of the wakeup chain after the waker (hop 1): hops 2, 3, ... Empty without one.
  std::vector<Hop> chain;
  // Why the chain ends (offwake_chain_end_name: "depth", "interrupt", ...); "" when the
  // recording has no chains (--chain-depth 1) or the waker was dropped (Filters::no_waker).
  std::string chain_end;
  uint64_t ns = 0;     // off-CPU: time blocked; on-CPU: sampled time (the periods)
  uint64_t count = 0;  // off-CPU: blocks; on-CPU: samples
  uint64_t max_ns = 0; // off-CPU: the longest block
  // --sample-period: the estimated variance of `ns` (ns^2; samples/offwake_raw.h); 0 when
  // every block was recorded at its length. Variances of distinct stacks add up.
  double variance = 0;
};

// What the samples are filtered by, before they are summed. Empty sets keep everything.
struct Filters {
  // The blocked (or sampled) samples kept (report/sample_filter.h); a waker goes with its
  // blocked sample.
  SampleSelection select;
  bool kernel_only = false, user_only = false;  // frames kept, in every stack (chains too)
  bool no_waker = false;                        // drop the waker and its chain (blocked stacks only)
};

struct Profile {
  std::vector<Stack> stacks;  // summed: no two equal in every field above but the sums
  perfdata::FileInfo info;    // host, command line, build ids
  // perf offwake record's counters (the key=value feature section), in file order; empty
  // for a stream or a recording made by something else.
  std::vector<std::pair<std::string, uint64_t>> counters;
  std::string on_cpu_event;   // the sampling event's name, if any ("cpu-clock")
  uint64_t off_cpu_ns = 0, on_cpu_ns = 0;  // totals after the filters
  uint64_t blocks = 0, on_cpu_samples = 0;
  uint64_t samples_read = 0;  // every sample of the input
  uint64_t unpaired = 0;      // offwake-time samples with no waker sample after them
  uint64_t chains_cut_short = 0;  // offwake-time samples followed by fewer hops than announced
  uint64_t stray_hop_samples = 0; // offwake-hop-* samples that follow no offwake-time sample
  bool wakers_dropped = false;  // loaded with Filters::no_waker
  // Off-CPU stacks (and their time) left out of every output by report --min; the totals
  // above keep them, so that shares stay shares of the whole.
  uint64_t below_min_stacks = 0, below_min_ns = 0;
  // --sample-period: the period (the largest, if inputs differ), and the estimated variance
  // of off_cpu_ns; 0 for an exact recording.
  uint64_t sample_period_ns = 0;
  double off_cpu_variance = 0;
  // What of the input could not be used, one line each, naming the input: for the command
  // to say on standard error (a stream cut inside a record, a corrupt counters section).
  std::vector<std::string> warnings;
};

// The standard error of a sampled time, from its estimated variance.
inline double standard_error(double variance) { return variance > 0 ? std::sqrt(variance) : 0; }

// Stack::chain_end of a chain whose recording ends before its last announced hop.
inline constexpr const char* kChainCutShort = "cut-short";

// Called now and then while reading with (bytes read, total bytes or 0 for a stream).
using Progress = std::function<void(uint64_t done, uint64_t total)>;

// Reads `input` ("-" for standard input) into a Profile. Its errors name the input.
Result<Profile> load_profile(const std::string& input, const Filters& filters, const Progress& progress = {});

// A counter of the recording, 0 if it has none of that name.
uint64_t counter(const Profile& p, std::string_view name);

// What the recording's BPF programs cost, with the task work's, when the kernel measured it
// (perf offwake record --bpf-stats, or kernel.bpf_stats_enabled on): "BPF programs: T s of
// CPU in N runs, P% of one CPU over D s recorded"; "" if it was not measured.
std::string bpf_time_text(const Profile& p);

// Several recordings as one (perf offwake record --switch-output writes a file per window):
// `from`'s stacks added to `into`'s, equal stacks summed, and the totals and the counters
// (key by key) summed. The host and command line stay `into`'s.
void merge_profile(Profile& into, Profile from);

}  // namespace offwake::report
