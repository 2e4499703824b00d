// What a recording saw and what it lost, printed at the end and stored in perf.data.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "callchain/stack_ids.h"
#include "callchain/user_stack.h"
#include "offwake.h"
#include "perfdata/bytes.h"
#include "synth/build_id_dir.h"
#include "util/result.h"

namespace offwake {

// Our own feature section (a perf_header_string_list of "key=value"). A bit far above perf's
// features: perf reads past feature bits it does not know.
constexpr int kFeatOffwakeStats = 255;

struct RecordStats {
  uint64_t duration_ns = 0;
  uint64_t sample_period_ns = 0;  // --sample-period (0: every block, exactly)
  uint64_t keys = 0;          // aggregates written (one offwake-time + one offwake-waker sample each)
  uint64_t offwake_samples = 0;  // samples written for them: blocked, waker, and chain hops
  uint64_t timeline_events = 0;  // --timeline: blocks written as their own samples
  uint64_t blocked_ns = 0;    // summed over them
  offwake_counters counters{};
  // BPF program runs the kernel skipped (a BPF program already ran on that CPU).
  uint64_t skipped_switches = 0;  // blocks lost: their start or end was never seen
  uint64_t skipped_wakeups = 0;   // wakeups lost
  uint64_t skipped_other = 0;     // forks, exits, system call returns (nothing lost)
  // Stacks missing from the samples written, by cause (per sample, not per capture).
  StackLosses kernel_missing, user_missing;
  uint64_t sample_stacks = 0;  // stack halves the written samples asked for
  // --switch-output: how often the stack store was emptied of the stacks no window used, and
  // of how many (StackTraceMap::end_window()).
  uint64_t stack_store_emptied = 0, stacks_emptied = 0;
  uint64_t tracking_undecodable = 0;  // ring-buffer records of unknown type
  uint64_t on_cpu_samples = 0;        // --on-cpu samples written
  uint64_t perf_lost = 0;             // records the kernel dropped from perf ring buffers (LOST)
  // PERF_RECORD_CGROUP records written, and cgroup ids named by samples but found nowhere
  // (gone before they could be named: perf shows "unknown" for them).
  uint64_t cgroups_described = 0, cgroups_unnamed = 0;
  // --backend tracepoint: the scheduler events the perf ring buffers dropped (also counted in
  // counters.ringbuf_drops: each may have lost a block), those that came out of time order
  // (paired at the time already reached), and those that could not be decoded.
  bool tracepoint = false;
  uint64_t tracepoint_lost = 0, tracepoint_late = 0, tracepoint_undecodable = 0;
  // Scheduler events read from perf (the tracepoint back end, convert) whose callchain was cut
  // at a word that is no context marker: a user walk gone astray (Callchain::cut()).
  uint64_t callchains_cut = 0;
  // --call-graph dwarf (the tracepoint back end), and convert of such a recording: the user
  // stacks unwound from stack copies, and what became of them.
  UserUnwindCounts user_unwind;
  uint64_t bytes = 0;
  std::string output;
  // --user-walker=auto: the unwind tables (record/user_unwind.h).
  struct Unwind {
    bool used = false;
    uint64_t tables = 0, bytes = 0, capacity_bytes = 0, setup_ns = 0, build_ns = 0;
    uint64_t no_rows = 0, unreadable = 0, too_large = 0;  // binaries walked by frame pointers
    uint64_t processes = 0, mappings = 0, mappings_without_table = 0, mappings_over_limit = 0;
    uint64_t publish_failures = 0;
    // Processes outside the targets given tables on request (their threads woke a target),
    // and the time that took.
    uint64_t processes_on_request = 0, request_ns = 0;
    // Tables built beside the recording (binaries mapped during it), and the processes walked
    // by frame pointers where one of theirs was still being built, the longest for how long.
    uint64_t built_beside = 0, processes_awaiting_table = 0, longest_table_wait_ns = 0;
    std::vector<std::string> failed;  // "path: why", for -v
  } unwind;
  // The BPF programs' runs and CPU time in this recording (or window), as the kernel counted
  // them (bpf_prog_info run_cnt and run_time_ns); the task work's time is apart
  // (counters.user_work_ns), for the kernel counts it in no program. Only `measured` when the
  // kernel's run-time statistics were on all along (--bpf-stats, kernel.bpf_stats_enabled):
  // else they are not printed, and stored as zeros.
  struct ProgramTime {
    std::string program;
    uint64_t runs = 0, ns = 0;
  };
  struct BpfTime {
    bool measured = false;
    std::vector<ProgramTime> programs;
    uint64_t runs() const;
    uint64_t ns() const;
    // This time less `before`'s (the counts at a window's start), program by program.
    void subtract(const BpfTime& before);
  } bpf_time;
  // The binaries of the recorded processes put into perf's build-id cache (not enabled: with
  // --no-buildid-cache): the whole recording's so far, in each file.
  BuildIdCacheCounts buildid_cache;

  // Blocks that did not become samples, and wakeups that were not recorded.
  uint64_t lost_blocks() const;
  // The written samples' stacks missing, kernel and user halves together.
  StackLosses missing_stacks() const;
  uint64_t lost_wakeups() const;
  perfdata::Bytes encode() const;
  // key=value lines, as stored.
  std::vector<std::pair<std::string, uint64_t>> fields() const;
};

void print_record_summary(FILE* out, const RecordStats& s);
// With --sample-period, the line on what was kept and weighted: "[ perf offwake COMMAND: ...".
void print_sampling_summary(FILE* out, const char* command, const RecordStats& s);
// The line on the BPF programs' time (RecordStats::bpf_time), if it was measured.
void print_bpf_time_summary(FILE* out, const RecordStats& s);
// The line on user stacks unwound from stack copies, if any were: "[ perf offwake COMMAND: ...".
void print_user_unwind_summary(FILE* out, const char* command, const UserUnwindCounts& u);
// -v: each binary whose code is walked by frame pointers for want of a table, and why.
void print_unwind_failures(FILE* out, const RecordStats& s);
// -v: each binary that is not in the build-id cache, and why.
void print_build_id_cache_failures(FILE* out, const RecordStats& s);

// The key=value lines of an encoded section (RecordStats::encode()).
Result<std::vector<std::pair<std::string, uint64_t>>> decode_record_stats(std::span<const uint8_t> section);

}  // namespace offwake
