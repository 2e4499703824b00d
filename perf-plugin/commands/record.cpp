// perf offwake record: the options, checked, then a recording (record/recording.h) and its
// summary. The exit status is perf record's: the command's, or a shell's for a command that
// could not run.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "bpf/libbpf_log.h"
#include "commands/command.h"
#include "commands/id_list.h"
#include "commands/options.h"
#include "commands/parent_perf.h"
#include "record/recording.h"
#include "record/workload.h"
#include "samples/record_stats.h"

namespace offwake {
namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
// --switch-output=signal: SIGUSR2 ends the window (the recorder clears the flag).
volatile sig_atomic_t g_switch = 0;
void on_switch_signal(int) { g_switch = 1; }

// -p's and -t's lists into the options (commands/id_list.h has the rule).
Status add_id_list(const std::string& text, const char* option, const char* what, std::vector<uint32_t>& out) {
  auto ids = parse_id_list(text, option, what);
  if (!ids) return ids.error();
  for (uint32_t id : *ids)
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  return ok_status();
}

int cmd_record(const std::vector<std::string>& args) {
  RecordOptions o;
  std::vector<Option> table = {
      flag_option('a', "all-cpus", &o.all_cpus, "system-wide collection (the default without -p, -t or a command)"),
      callback_option('p', "pid", "pid[,pid]", [&](const std::string& v) { return add_id_list(v, "-p", "pid", o.pids); },
                      "record the blocking of these processes (wakers may be anyone)"),
      callback_option('t', "tid", "tid[,tid]",
                      [&](const std::string& v) { return add_id_list(v, "-t", "thread id", o.tids); },
                      "record the blocking of these threads only (not their processes' others)"),
      string_option('o', "output", "file", &o.output, "output file name ('-' for a pipe); default perf.data"),
      flag_option('u', "user-threads-only", &o.user_only, "only user threads block"),
      flag_option(0, "kernel-threads-only", &o.kernel_only, "only kernel threads block"),
      string_option(0, "state", "S|D|I", &o.state,
                    "waits recorded: S sleep, D uninterruptible, I idle kernel threads (default SDI)"),
      double_option(0, "min-block", "usecs", &o.min_block_us, "ignore blocks shorter than this"),
      double_option(0, "max-block", "usecs", &o.max_block_us, "ignore blocks longer than this"),
      double_option(0, "sample-period", "usecs", &o.sample_period_us,
                    "sample blocks by time: keep a block of d with probability d/usecs, weighted usecs "
                    "(longer ones all, exactly); times become unbiased estimates"),
      string_option('G', "cgroup", "path", &o.cgroup, "only tasks in this cgroup v2 directory (and below)"),
      flag_option(0, "namespaces", &o.namespaces, "record the namespaces of the processes described (as perf record)"),
      double_option(0, "duration", "secs", &o.duration, "stop after this many seconds"),
      uint_option(0, "stack-storage-size", "n", &o.stack_entries, "entries of the BPF stack map (default 16384)"),
      uint_option(0, "map-size", "n", &o.map_entries, "entries of the BPF aggregation map (default 16384)"),
      uint_option(0, "max-stack", "n", &o.max_stack, "frames per stack (default kernel.perf_event_max_stack)"),
      uint_option(0, "process-map-size", "n", &o.process_entries,
                  "processes followed at once with -p or a command, children included (default 65536)"),
      flag_option(0, "eager", &o.eager, "take every stack at once, even for blocks the filters drop"),
      flag_option(0, "sched-frames", &o.sched_frames,
                  "keep the scheduler's own frames (mutex_lock, io_schedule, ...) in blocked kernel stacks"),
      flag_option(0, "check-replays", &o.check_replays,
                  "unwind every kernel stack replayed from a thread's last ones as well, and count those that "
                  "differ (a check; costs what replays save)"),
      flag_option(0, "bpf-stats", &o.bpf_stats,
                  "measure what the BPF programs cost (the kernel's run-time statistics, on for the recording: "
                  "two clock reads a run of every BPF program)"),
      string_option(0, "user-walker", "auto|fp|kernel", &o.user_walker,
                    "who walks user stacks: .eh_frame unwind tables, frame pointers elsewhere (auto, default); "
                    "frame pointers only (fp); bpf_get_stackid() (kernel)"),
      uint_option(0, "unwind-memory", "mb", &o.unwind_memory_mb,
                  "memory for unwind tables with --user-walker=auto, in MiB (default 64)"),
      uint_option(0, "chain-depth", "n", &o.chain_depth,
                  "wakeup chain: who woke the waker, up to n hops with their stacks (default 1)"),
      flag_option(0, "timeline", &o.timeline, "one sample per block with its real time (BPF ring buffer), not aggregated"),
      uint_option(0, "ringbuf-size", "mb", &o.ringbuf_mb, "--timeline ring buffer size in MiB, a power of two (default 8)"),
      flag_option(0, "on-cpu", &o.on_cpu, "also sample on-CPU stacks with a perf event (-e, -F, -c)"),
      string_option('e', "event", "event", &o.event, "--on-cpu event: cpu-clock (default), task-clock, cycles, ..."),
      uint_option('F', "freq", "hz", &o.frequency, "--on-cpu sampling frequency (default 4000)"),
      uint_option('c', "count", "n", &o.period, "--on-cpu sampling period in events (instead of -F)"),
      string_option(0, "backend", "bpf|tracepoint|auto", &o.backend,
                    "how blocks are recorded: BPF, the scheduler tracepoints (no BPF, costlier), or auto: BPF "
                    "when it can be loaded (default)"),
      uint_option(0, "mmap-pages", "n", &o.mmap_pages,
                  "tracepoint back end: ring buffer pages per CPU, a power of two (default 1024)"),
      string_option(0, "call-graph", "fp|dwarf[,size]", &o.call_graph,
                    "the tracepoint back end's user stacks: the kernel's frame-pointer callchain (default), "
                    "or a copy of SIZE bytes (default 8192) of user stack per event, unwound with DWARF CFI"),
      optional_string_option(0, "switch-output", "signal|time|size", &o.switch_output, "signal",
                             "a file per window, output.<timestamp>: a new one on SIGUSR2 (signal, the default), "
                             "every TIME (10s, 5m, 1h, 1d) or at SIZE (100M; B, K, M, G)"),
      string_option(0, "switch-max-files", "n", &o.switch_max_files,
                    "with --switch-output: keep only the newest n files"),
      flag_option('N', "no-buildid-cache", &o.no_buildid_cache,
                  "do not put the recorded processes' binaries into the build-id cache ($PERF_BUILDID_DIR, "
                  "else ~/.debug)"),
      uint_option(0, "buildid-cache-max", "mb", &o.buildid_cache_mb,
                  "at most this many MiB of binaries added to the build-id cache per recording (default 1024)"),
      flag_option('v', "verbose", &o.verbose, "be more verbose (libbpf's messages, binaries not cached)"),
      flag_option('q', "quiet", &o.quiet, "do not print the summary"),
  };
  const std::vector<std::string> usage = {"perf offwake record [<options>] [-- <command> [<args>]]"};
  ParsedArgs parsed = parse_command_line(args, table, usage, true);
  o.given = parsed.given;
  if (std::string error = record_usage_error(o); !error.empty()) {
    fprintf(stderr, "perf offwake record: %s\n", error.c_str());
    return kExitUsage;
  }
  if (o.output.empty()) o.output = default_output();
  // The output is known now (a pipe on stdout makes it "-"): --switch-output needs files.
  if (std::string error = record_usage_error(o); !error.empty()) {
    fprintf(stderr, "perf offwake record: %s\n", error.c_str());
    return kExitUsage;
  }
  // As perf record's target check: the narrower target wins, and says so.
  if (!o.tids.empty() && !o.pids.empty()) {
    std::string tids;
    for (uint32_t tid : o.tids) tids += (tids.empty() ? "" : ",") + std::to_string(tid);
    fprintf(stderr, "perf offwake record: warning: -t overrides -p: only thread%s %s %s recorded\n",
            o.tids.size() > 1 ? "s" : "", tids.c_str(), o.tids.size() > 1 ? "are" : "is");
    o.pids.clear();
  }
  if (o.all_cpus && (!o.tids.empty() || !o.pids.empty())) {
    fprintf(stderr, "perf offwake record: warning: %s overrides -a: only its blocking is recorded\n",
            o.tids.empty() ? "-p" : "-t");
    o.all_cpus = false;
  }
  bpf::set_libbpf_verbosity(o.verbose ? 1 : 0);

  // A command that cannot run fails before anything is loaded.
  if (!parsed.rest.empty()) {
    if (Status c = Workload::check_command(parsed.rest[0]); !c) {
      fprintf(stderr, "perf offwake record: %s\n", c.error().message().c_str());
      return Workload::exec_failure_status(c.error().errnum());
    }
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);  // its terminal closed: the file is written all the same
  signal(SIGPIPE, SIG_IGN);
  if (!o.switch_output.empty()) {
    struct sigaction su {};
    su.sa_handler = on_switch_signal;
    sigaction(SIGUSR2, &su, nullptr);
  }
  // Started as `perf offwake record`: stop as on SIGTERM when perf dies.
  follow_parent_perf(SIGTERM);

  std::vector<std::string> argv = {"perf", "offwake"};
  argv.insert(argv.end(), args.begin(), args.end());
  int exec_errno = 0;
  auto rec = record_offwake(o, parsed.rest, argv, g_stop, exec_errno, &g_switch);
  if (!rec) {
    fprintf(stderr, "perf offwake record: %s\n", rec.error().message().c_str());
    // As a shell: 127 for a command not found, 126 for one that cannot run.
    return exec_errno ? Workload::exec_failure_status(exec_errno) : kExitFailure;
  }
  if (!o.quiet) print_record_summary(stderr, rec->stats);
  if (o.verbose) {
    print_unwind_failures(stderr, rec->stats);
    print_build_id_cache_failures(stderr, rec->stats);
  }
  if (rec->workload_signal)
    fprintf(stderr, "[ perf offwake record: the command was killed by signal %d (%s); the recording up to then is kept ]\n",
            rec->workload_signal, strsignal(rec->workload_signal));
  else if (!parsed.rest.empty() && rec->workload_status != 0)
    fprintf(stderr, "[ perf offwake record: the command exited with status %d ]\n", rec->workload_status);
  return rec->workload_status;  // like perf record: the workload's exit status (128 + N for signal N)
}

}  // namespace

int run_record(const std::vector<std::string>& args) { return cmd_record(args); }

}  // namespace offwake
