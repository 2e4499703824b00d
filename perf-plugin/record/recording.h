// A recording by perf offwake record: a back end (BlockSource) pairs each block with its
// waker and aggregates blocked time by (blocked thread, its stacks, waker, waker's stacks):
// the BPF programs on the scheduler tracepoints, or without BPF the tracepoints read through
// libperf and paired in user space. libperf tracks COMM/MMAP2/FORK/EXIT; at the end
// BlockWriter turns every aggregate into its samples, whichever back end made it.
#pragma once

#include <csignal>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "samples/record_stats.h"
#include "util/result.h"

namespace offwake {

// perf offwake record's options, as its option table fills them.
struct RecordOptions {
  bool all_cpus = false;
  std::vector<uint32_t> pids;
  std::vector<uint32_t> tids;  // -t: these threads only (their processes' other threads not)
  std::string output;
  bool user_only = false, kernel_only = false;
  std::string state = "SDI";
  double min_block_us = 0, max_block_us = 0;
  double sample_period_us = 0;  // --sample-period: time-weighted sampling; 0: every block
  std::string cgroup;
  // --namespaces: PERF_RECORD_NAMESPACES of the processes described.
  bool namespaces = false;
  double duration = 0;
  uint64_t stack_entries = 16384, map_entries = 16384, max_stack = 0, process_entries = 65536;
  // When and how stacks are taken (see bpf::LoaderOptions).
  bool eager = false, sched_frames = false, check_replays = false;
  // --bpf-stats: the kernel's run-time statistics on for the recording, so that the summary
  // and the file tell what the BPF programs cost (as with kernel.bpf_stats_enabled on).
  bool bpf_stats = false;
  std::string user_walker = "auto";
  uint64_t unwind_memory_mb = 64;
  bool verbose = false, quiet = false;
  // perf's build-id cache: the recorded processes' binaries go in (not with --no-buildid-cache),
  // at most this many MiB of them per recording (--buildid-cache-max).
  bool no_buildid_cache = false;
  uint64_t buildid_cache_mb = 1024;
  // --on-cpu: a perf sampling event in the same recording.
  bool on_cpu = false;
  std::string event = "cpu-clock";
  uint64_t frequency = 0, period = 0;
  // --timeline: one sample per block, with its real time, through a BPF ring buffer.
  bool timeline = false;
  uint64_t ringbuf_mb = 8;
  // --chain-depth: hops of wakeup chain (1: the waker only).
  uint64_t chain_depth = 1;
  // --backend: bpf, tracepoint, or auto (BPF, else the tracepoints); --mmap-pages: ring
  // buffer pages per CPU of the tracepoint back end.
  std::string backend = "auto";
  uint64_t mmap_pages = 1024;
  // --call-graph: fp (the kernel's frame-pointer walk, or BPF's) or dwarf[,SIZE] (the
  // tracepoint back end copies SIZE bytes of user stack per event, unwound in user space).
  std::string call_graph = "fp";
  // --switch-output[=signal|TIME|SIZE]: a file per window, named output.<timestamp> as perf
  // names them (record/switch_output.h); --switch-max-files: keep the newest N. Empty: one
  // file.
  std::string switch_output;
  std::string switch_max_files;
  std::set<std::string> given;  // the options on the command line, as "--name"
};

// Why these options make no recording (a usage error), or "" when they can. A Recorder
// takes only options that passed.
std::string record_usage_error(const RecordOptions& o);

// Options that only the BPF back end can do, when given: the first one, or "".
std::string bpf_only_option(const RecordOptions& o);

struct RecordOutcome {
  RecordStats stats;  // with --switch-output, every window's summed
  uint64_t files = 0;  // --switch-output: files written (some may have been rotated away)
  int workload_status = 0, workload_signal = 0;
};

// Records until `stop` is set (by a signal), --duration has passed or the command (if any)
// has exited, and writes o.output. `argv` is the command line stored in the file. A command
// that could not be run sets `exec_errno` (else it stays 0). With --switch-output=signal, a
// set `switch_now` (SIGUSR2) ends a window; the recorder clears it.
Result<RecordOutcome> record_offwake(const RecordOptions& o, const std::vector<std::string>& command,
                                     const std::vector<std::string>& argv, const volatile sig_atomic_t& stop,
                                     int& exec_errno, volatile sig_atomic_t* switch_now = nullptr);

}  // namespace offwake
