// perf offwake record: a back end (BlockSource) pairs each block with its waker and
// aggregates blocked time by (blocked thread, its stacks, waker, waker's stacks): BPF on the
// scheduler tracepoints, or without BPF the tracepoints read through libperf and paired in user
// space. libperf tracks COMM/MMAP2/FORK/EXIT; at the end every aggregate becomes an
// offwake-time sample and its offwake-waker sample, whichever back end made it.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "bpf/libbpf_log.h"
#include "bpf/offwake_loader.h"
#include "record/block_source.h"
#include "record/bpf_blocks.h"
#include "record/tracepoint_blocks.h"
#include "commands/command.h"
#include "commands/options.h"
#include "perfdata/writer.h"
#include "samples/block_writer.h"
#include "commands/parent_perf.h"
#include "record/offwake_file.h"
#include "samples/offwake_events.h"
#include "samples/record_stats.h"
#include "record/workload.h"
#include "synth/host_info.h"
#include "synth/kernel_maps.h"
#include "synth/proc_maps.h"
#include "synth/process_descriptions.h"
#include "tracking/tracking_events.h"

namespace offwake {
namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct RecordOptions {
  bool all_cpus = false;
  std::vector<uint32_t> pids;
  uint64_t tid = 0;
  std::string output;
  bool user_only = false, kernel_only = false;
  std::string state = "SDI";
  double min_block_us = 0, max_block_us = 0;
  std::string cgroup;
  double duration = 0;
  uint64_t stack_entries = 16384, map_entries = 16384, max_stack = 0, process_entries = 65536;
  // When and how stacks are taken (see bpf::LoaderOptions).
  bool eager = false, sched_frames = false;
  std::string user_walker = "bpf";
  bool verbose = false, quiet = false;
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
  std::set<std::string> given;  // the options on the command line, as "--name"
};

// Options that only the BPF back end can do, when given: the first one, or "".
std::string bpf_only_option(const RecordOptions& o) {
  if (o.chain_depth > 1) return "--chain-depth";
  for (const char* name : {"--eager", "--user-walker", "--cgroup", "--stack-storage-size", "--map-size",
                           "--process-map-size", "--ringbuf-size"})
    if (o.given.count(name)) return name;
  return "";
}

// The first line of a message (a failed BPF load's carries libbpf's log after it).
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

Status parse_pid_list(const std::string& s, std::vector<uint32_t>& out) {
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    unsigned long v = strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end || v == 0 || v > 4194304 /* PID_MAX_LIMIT */) return Error("'" + item + "' is not a pid");
    out.push_back(static_cast<uint32_t>(v));
  }
  return ok_status();
}


// -p names processes: a thread id that is not its process's id would match no block.
Status check_process(uint32_t pid) {
  const std::string status = "/proc/" + std::to_string(pid) + "/status";
  FILE* f = fopen(status.c_str(), "re");
  if (!f) return Error("process " + std::to_string(pid) + " does not exist");
  char line[256];
  long tgid = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Tgid: %ld", &tgid) == 1) break;
  fclose(f);
  if (tgid > 0 && static_cast<uint32_t>(tgid) != pid)
    return Error(std::to_string(pid) + " is a thread of process " + std::to_string(tgid) + ": use -p " +
                 std::to_string(tgid) + " for the process, or -t " + std::to_string(pid) + " for the thread");
  return ok_status();
}


// The recording, with its resources in set-up order (torn down in reverse).
class Recorder {
 public:
  explicit Recorder(const RecordOptions& o) : opt_(o) {}
  Status run(const std::vector<std::string>& command, const std::vector<std::string>& argv);
  const RecordStats& stats() const { return stats_; }
  int workload_status() const { return workload_status_; }
  int workload_signal() const { return workload_signal_; }
  // The errno of a command that could not be run (0 if none).
  int exec_errno() const { return exec_errno_; }

 private:
  Result<bpf::LoaderOptions> loader_options() const;
  TracepointBlockOptions tracepoint_options() const;
  Status open_source();
  Status drain_tracking();
  bool wanted_on_cpu(const perfdata::SampleRecord& s);
  Status write_aggregates();
  bool system_wide() const;
  Status describe_targets();
  Status describe(const std::vector<perfdata::SampleRecord>& samples);
  std::optional<Kallsyms> kallsyms_;

  const RecordOptions& opt_;
  std::optional<Workload> workload_;
  std::unique_ptr<BlockSource> source_;
  std::optional<TrackingEvents> tracking_;
  std::optional<perfdata::PerfDataWriter> writer_;
  std::optional<ProcessDescriptions> descriptions_;
  std::optional<BlockWriter> blocks_;
  std::set<uint32_t> pseudo_described_;
  OffwakeEventIds ids_;
  RecordStats stats_;
  int workload_status_ = 0, workload_signal_ = 0, exec_errno_ = 0;
};

Result<bpf::LoaderOptions> Recorder::loader_options() const {
  bpf::LoaderOptions lo;
  if (workload_ && !opt_.all_cpus) {
    lo.tgids = {static_cast<uint32_t>(workload_->pid())};
    lo.follow_forks = true;
  }
  for (uint32_t pid : opt_.pids) lo.tgids.push_back(pid);
  lo.tid = static_cast<uint32_t>(opt_.tid);
  lo.user_threads_only = opt_.user_only;
  lo.kernel_threads_only = opt_.kernel_only;
  auto mask = parse_state_letters(opt_.state);
  if (!mask) return mask.error();
  lo.state_mask = *mask;
  lo.max_tgids = static_cast<uint32_t>(opt_.process_entries);
  lo.eager = opt_.eager;
  lo.sched_frames = opt_.sched_frames;
  lo.kernel_user_walker = opt_.user_walker == "kernel";
  lo.min_block_ns = static_cast<uint64_t>(opt_.min_block_us * 1000);
  lo.max_block_ns = static_cast<uint64_t>(opt_.max_block_us * 1000);
  lo.cgroup_path = opt_.cgroup;
  lo.stack_map_entries = static_cast<uint32_t>(opt_.stack_entries);
  lo.aggregate_entries = static_cast<uint32_t>(opt_.map_entries);
  lo.max_stack_depth = static_cast<uint32_t>(opt_.max_stack);
  lo.timeline = opt_.timeline;
  lo.ringbuf_bytes = static_cast<uint32_t>(opt_.ringbuf_mb << 20);
  lo.chain_depth = static_cast<uint32_t>(opt_.chain_depth);
  return lo;
}

// The same filters for the tracepoint back end's pairer.
TracepointBlockOptions Recorder::tracepoint_options() const {
  TracepointBlockOptions t;
  sched::PairerOptions& p = t.pairer;
  if (workload_ && !opt_.all_cpus) {
    p.tgids.insert(static_cast<uint32_t>(workload_->pid()));
    p.follow_forks = true;
  }
  p.tgids.insert(opt_.pids.begin(), opt_.pids.end());
  p.tid = static_cast<uint32_t>(opt_.tid);
  p.user_threads_only = opt_.user_only;
  p.kernel_threads_only = opt_.kernel_only;
  p.state_mask = parse_state_letters(opt_.state).value();  // checked by cmd_record
  p.min_block_ns = static_cast<uint64_t>(opt_.min_block_us * 1000);
  p.max_block_ns = static_cast<uint64_t>(opt_.max_block_us * 1000);
  if (opt_.timeline) p.timeline = [](const offwake_event&) {};  // the back end routes it
  t.sched_frames = opt_.sched_frames;
  uint32_t depth = 127;
  if (auto sysctl = bpf::perf_event_max_stack()) depth = *sysctl;
  if (opt_.max_stack && opt_.max_stack < depth) depth = static_cast<uint32_t>(opt_.max_stack);
  t.tracepoints.max_stack = static_cast<uint16_t>(std::min<uint32_t>(depth, UINT16_MAX));
  t.tracepoints.mmap_pages = static_cast<unsigned>(opt_.mmap_pages);
  return t;
}

// --backend: BPF, the tracepoints, or (auto) BPF unless this machine cannot load the programs.
Status Recorder::open_source() {
  if (opt_.backend == "tracepoint") {
    auto tp = open_tracepoint_blocks(tracepoint_options());
    if (!tp) return tp.error();
    source_ = std::move(tp).value();
    return ok_status();
  }
  auto lo = loader_options();
  if (!lo) return lo.error();
  bool unavailable = false;
  auto bpf = load_bpf_blocks(*lo, &unavailable);
  if (bpf) {
    source_ = std::move(bpf).value();
    return ok_status();
  }
  if (opt_.backend == "bpf" || !unavailable) return bpf.error();
  const std::string why = first_line(bpf.error().message());
  if (std::string option = bpf_only_option(opt_); !option.empty())
    return Error("the BPF programs cannot be loaded (" + why + "), and " + option + " needs them");
  auto tp = open_tracepoint_blocks(tracepoint_options());
  if (!tp)
    return Error("the BPF programs cannot be loaded (" + why + "), nor the scheduler tracepoints (" +
                 first_line(tp.error().message()) + ")");
  // Said once the tracepoints are open: a failure of both is one line.
  fprintf(stderr, "perf offwake record: BPF unavailable (%s): using the scheduler tracepoints (--backend tracepoint)\n",
          why.c_str());
  source_ = std::move(tp).value();
  return ok_status();
}

// On-CPU samples are taken on every CPU; keep those of the threads being recorded.
bool Recorder::wanted_on_cpu(const perfdata::SampleRecord& s) {
  if (opt_.tid) return s.tid == opt_.tid;
  if (opt_.pids.empty() && (!workload_ || opt_.all_cpus)) return true;
  return source_->is_target(s.pid);
}

Status Recorder::drain_tracking() {
  auto emit = [this](const perfdata::Record& d) { return writer_->write(d); };
  return tracking_->drain([&](const perfdata::Record& r) -> Status {
    source_->tracking(r);
    if (const auto* s = std::get_if<perfdata::SampleRecord>(&r)) {
      if (!wanted_on_cpu(*s)) return ok_status();
      ++stats_.on_cpu_samples;
      OFFWAKE_TRY(descriptions_->describe(s->pid, emit));
      return writer_->write(r);
    }
    if (const auto* l = std::get_if<perfdata::LostRecord>(&r)) {
      stats_.perf_lost += l->lost;
      return writer_->write(r);
    }
    // COMM, MMAP2, FORK, EXIT: of the processes recorded now, of the others once a sample
    // names them.
    return descriptions_->tracking(r, [this](uint32_t pid) { return source_->is_target(pid); }, emit);
  });
}

Status Recorder::run(const std::vector<std::string>& command, const std::vector<std::string>& argv) {
  for (uint32_t pid : opt_.pids) OFFWAKE_TRY(check_process(pid));
  if (opt_.tid && !path_exists("/proc/" + std::to_string(opt_.tid)))
    return Error("thread " + std::to_string(opt_.tid) + " does not exist");

  if (!command.empty()) {
    if (Status s = Workload::check_command(command[0]); !s) {
      exec_errno_ = s.error().errnum();
      return s;
    }
    auto w = Workload::prepare(command, opt_.output == "-");
    if (!w) return w.error();
    workload_.emplace(std::move(w).value());
  }
  OFFWAKE_TRY(open_source());

  SamplingConfig sampling;
  if (opt_.on_cpu) {
    OFFWAKE_TRY(parse_sampling_event(opt_.event, sampling));
    sampling.use_frequency = opt_.period == 0;
    if (opt_.frequency) sampling.frequency = opt_.frequency;
    sampling.period = opt_.period;
    sampling.max_stack = static_cast<uint16_t>(source_->stack_depth());
  }
  auto tracking = TrackingEvents::open(opt_.on_cpu ? &sampling : nullptr);
  if (!tracking) return tracking.error();
  tracking_.emplace(std::move(tracking).value());

  std::vector<perfdata::EventDesc> events = offwake_events(ids_ = pick_event_ids(tracking_->events(), opt_.chain_depth > 1));
  for (const auto& e : tracking_->events()) events.push_back(e);
  auto host = collect_host_info(argv);
  bool pipe = opt_.output == "-";
  auto writer = pipe ? perfdata::PerfDataWriter::create_pipe(UniqueFd(dup(STDOUT_FILENO)), events, host)
                     : perfdata::PerfDataWriter::create_file(opt_.output, events, host);
  if (!writer) return writer.error();
  writer_.emplace(std::move(writer).value());

  // Tracking first, then what already exists: a mapping made in between is seen twice,
  // never missed.
  tracking_->enable();
  auto kallsyms = Kallsyms::load();
  if (!kallsyms) return kallsyms.error();
  kallsyms_.emplace(std::move(kallsyms).value());
  auto kmap = kernel_mmap(*kallsyms_);
  if (!kmap) return kmap.error();
  OFFWAKE_TRY(writer_->write(*kmap));
  writer_->add_build_id(kernel_build_id_entry());
  BuildIdCache build_ids;
  auto descriptions = ProcessDescriptions::take(build_ids, !system_wide(), [&](const perfdata::Record& r) { return writer_->write(r); });
  if (!descriptions) return descriptions.error();
  descriptions_.emplace(std::move(descriptions).value());
  OFFWAKE_TRY(describe_targets());
  OFFWAKE_TRY(writer_->finished_init());

  blocks_.emplace(*writer_, source_->stacks(), ids_, &*kallsyms_, stats_,
                  [this](const std::vector<perfdata::SampleRecord>& s) { return describe(s); });

  OFFWAKE_TRY(source_->start());
  const uint64_t start = monotonic_ns();
  if (workload_) {
    if (Status s = workload_->start(); !s) {
      exec_errno_ = workload_->exec_errno();
      return s;
    }
  }

  auto write_event = [this](const offwake_event& e) { return blocks_->write(e); };
  const uint64_t deadline = opt_.duration > 0 ? start + static_cast<uint64_t>(opt_.duration * 1e9) : 0;
  while (!g_stop) {
    // Wait for events at most 100 ms, and no later than --duration's end: the stop is on time.
    if (!source_->paced()) {
      int wait_ms = 100;
      if (deadline) {
        const uint64_t now = monotonic_ns();
        wait_ms = now >= deadline ? 0 : static_cast<int>(std::min<uint64_t>(100, (deadline - now + 999'999) / 1'000'000));
      }
      tracking_->poll(wait_ms);
    }
    // The back end's events first, then the tracking records: a fork is then always seen
    // with (or before) the first events of its child.
    OFFWAKE_TRY(source_->read());
    OFFWAKE_TRY(drain_tracking());
    OFFWAKE_TRY(source_->step(write_event));
    // --timeline: a FINISHED_ROUND after each pass, so that perf and perf offwake report put
    // the file in order a round at a time. A block is dated back to its wakeup (or its start,
    // without one), so one written later may be older than a round perf has handed on: the
    // writer keeps only the rounds that hold (PerfDataWriter::end_round). Not for aggregated
    // samples: written at the end, stamped with a time during the recording, they would
    // undo every round.
    if (opt_.timeline) OFFWAKE_TRY(writer_->end_round());
    if (workload_ && workload_->exited()) break;
    if (deadline && monotonic_ns() >= deadline) break;
  }
  // The stop is when the back end stopped recording, not after it finished detaching (which
  // takes lazily a 20 ms grace): open blocks are counted up to it, no further.
  const uint64_t stop = source_->detach();
  stats_.duration_ns = stop - start;
  if (Status s = source_->end_open_blocks(stop); !s) {
    // Not fatal: the recording stands, without the blocks still in progress; say so.
    fprintf(stderr, "perf offwake record: warning: blocks in progress at the stop are not counted: %s\n",
            s.error().message().c_str());
  }
  if (workload_) {
    if (!workload_->exited()) {
      workload_->terminate();
      workload_->wait();
    }
    workload_status_ = workload_->exit_status();
    workload_signal_ = workload_->term_signal();
  }
  tracking_->disable();
  OFFWAKE_TRY(drain_tracking());
  OFFWAKE_TRY(source_->finish(write_event));
  OFFWAKE_TRY(write_aggregates());
  OFFWAKE_TRY(writer_->close());
  stats_.bytes = writer_->stats().bytes;
  stats_.output = pipe ? "(pipe)" : opt_.output;
  return ok_status();
}

// Without a command, -p or -t: the whole machine, as perf record -a.
bool Recorder::system_wide() const { return opt_.all_cpus || (!workload_ && opt_.pids.empty() && !opt_.tid); }

// At the start, what perf record synthesizes: every process system-wide (written already),
// else the processes the recording is about (the command, not yet exec'd, or -p's). The
// others wait until a sample names them (describe()).
Status Recorder::describe_targets() {
  auto emit = [this](const perfdata::Record& r) { return writer_->write(r); };
  if (workload_) OFFWAKE_TRY(descriptions_->describe(static_cast<uint32_t>(workload_->pid()), emit));
  for (uint32_t pid : opt_.pids) OFFWAKE_TRY(descriptions_->describe(pid, emit));
  return ok_status();
}

// Before a group of samples (a block, its waker and hops), the records that name their threads,
// each once: a pseudo-waker's COMM, a process not described yet (a waker from outside, -t's
// process). What /proc said at the start is stamped with time 0, as perf stamps what it
// synthesizes, and the kernel's records with their time: perf sorts them before the samples
// that need them wherever they are in the file, for there are no FINISHED_ROUND records (see
// run()). Written before the group, which stays contiguous.
Status Recorder::describe(const std::vector<perfdata::SampleRecord>& samples) {
  auto emit = [this](const perfdata::Record& r) { return writer_->write(r); };
  for (const auto& s : samples) {
    if (const PseudoWaker* p = pseudo_waker_of_tid(s.tid)) {
      if (pseudo_described_.insert(p->tid).second) OFFWAKE_TRY(write_pseudo_waker_comm(*writer_, ids_, *p));
      continue;
    }
    OFFWAKE_TRY(descriptions_->describe(s.pid, emit));
  }
  return ok_status();
}

Status Recorder::write_aggregates() {
  OFFWAKE_TRY(source_->fill_stats(stats_));
  stats_.tracking_undecodable = tracking_->undecodable();
  const uint64_t time = monotonic_ns();
  // A batch at a time: a recording of 100,000 keys need not hold them all.
  OFFWAKE_TRY(source_->visit_aggregates([&](std::span<const Aggregate> batch) -> Status {
    for (const auto& a : batch) OFFWAKE_TRY(blocks_->write(a, time));
    return ok_status();
  }));
  return blocks_->finish(time);
}

int cmd_record(const std::vector<std::string>& args) {
  RecordOptions o;
  std::vector<Option> table = {
      flag_option('a', "all-cpus", &o.all_cpus, "system-wide collection (the default without -p, -t or a command)"),
      callback_option('p', "pid", "pid[,pid]", [&](const std::string& v) { return parse_pid_list(v, o.pids); },
                      "record the blocking of these processes (wakers may be anyone)"),
      uint_option('t', "tid", "tid", &o.tid, "record the blocking of this thread only"),
      string_option('o', "output", "file", &o.output, "output file name ('-' for a pipe); default perf.data"),
      flag_option('u', "user-threads-only", &o.user_only, "only user threads block"),
      flag_option(0, "kernel-threads-only", &o.kernel_only, "only kernel threads block"),
      string_option(0, "state", "S|D|I", &o.state,
                    "waits recorded: S sleep, D uninterruptible, I idle kernel threads (default SDI)"),
      double_option(0, "min-block", "usecs", &o.min_block_us, "ignore blocks shorter than this"),
      double_option(0, "max-block", "usecs", &o.max_block_us, "ignore blocks longer than this"),
      string_option('G', "cgroup", "path", &o.cgroup, "only tasks in this cgroup v2 directory (and below)"),
      double_option(0, "duration", "secs", &o.duration, "stop after this many seconds"),
      uint_option(0, "stack-storage-size", "n", &o.stack_entries, "entries of the BPF stack map (default 16384)"),
      uint_option(0, "map-size", "n", &o.map_entries, "entries of the BPF aggregation map (default 16384)"),
      uint_option(0, "max-stack", "n", &o.max_stack, "frames per stack (default kernel.perf_event_max_stack)"),
      uint_option(0, "process-map-size", "n", &o.process_entries,
                  "processes followed at once with -p or a command, children included (default 65536)"),
      flag_option(0, "eager", &o.eager, "take every stack at once, even for blocks the filters drop"),
      flag_option(0, "sched-frames", &o.sched_frames,
                  "keep the scheduler's own frames (mutex_lock, io_schedule, ...) in blocked kernel stacks"),
      string_option(0, "user-walker", "bpf|kernel", &o.user_walker,
                    "who walks user stacks: our BPF frame-pointer walk (default) or bpf_get_stackid()"),
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
      flag_option('v', "verbose", &o.verbose, "be more verbose (libbpf's messages)"),
      flag_option('q', "quiet", &o.quiet, "do not print the summary"),
  };
  const std::vector<std::string> usage = {"perf offwake record [<options>] [-- <command> [<args>]]"};
  ParsedArgs parsed = parse_command_line(args, table, usage, true);
  o.given = parsed.given;
  if (o.backend != "bpf" && o.backend != "tracepoint" && o.backend != "auto") {
    fprintf(stderr, "perf offwake record: --backend takes bpf, tracepoint or auto, not '%s'\n", o.backend.c_str());
    return kExitUsage;
  }
  if (std::string option = bpf_only_option(o); o.backend == "tracepoint" && !option.empty()) {
    fprintf(stderr, "perf offwake record: %s needs the BPF back end (not --backend tracepoint)\n", option.c_str());
    return kExitUsage;
  }
  if (o.backend == "bpf" && o.given.count("--mmap-pages")) {
    fprintf(stderr, "perf offwake record: --mmap-pages sizes the tracepoint back end's ring buffers (not --backend bpf)\n");
    return kExitUsage;
  }
  if (o.mmap_pages == 0 || (o.mmap_pages & (o.mmap_pages - 1)) || o.mmap_pages > (1u << 20)) {
    fprintf(stderr, "perf offwake record: --mmap-pages must be a power of two from 1 to 1048576\n");
    return kExitUsage;
  }
  if (o.output.empty()) {
    struct stat st {};
    o.output = (fstat(STDOUT_FILENO, &st) == 0 && S_ISFIFO(st.st_mode)) ? "-" : "perf.data";
  }
  if (o.user_only && o.kernel_only) {
    fprintf(stderr, "perf offwake record: --user-threads-only and --kernel-threads-only exclude each other\n");
    return kExitUsage;
  }
  if (o.user_walker != "bpf" && o.user_walker != "kernel") {
    fprintf(stderr, "perf offwake record: --user-walker takes bpf or kernel, not '%s'\n", o.user_walker.c_str());
    return kExitUsage;
  }
  if (o.process_entries == 0 || o.process_entries > (1u << 24)) {
    fprintf(stderr, "perf offwake record: --process-map-size must be from 1 to 16777216\n");
    return kExitUsage;
  }
  // Microseconds whose nanoseconds fit in 64 bits (over 500 years).
  if (o.min_block_us > 1.8e13 || o.max_block_us > 1.8e13) {
    fprintf(stderr, "perf offwake record: --min-block and --max-block take at most 1.8e13 microseconds\n");
    return kExitUsage;
  }
  if (o.max_block_us && o.max_block_us < o.min_block_us) {
    fprintf(stderr, "perf offwake record: --max-block is below --min-block\n");
    return kExitUsage;
  }
  if (!o.on_cpu && (o.frequency || o.period || o.event != "cpu-clock")) {
    fprintf(stderr, "perf offwake record: -e, -F and -c go with --on-cpu\n");
    return kExitUsage;
  }
  if (o.frequency && o.period) {
    fprintf(stderr, "perf offwake record: -F and -c exclude each other\n");
    return kExitUsage;
  }
  if (SamplingConfig check; o.on_cpu && !parse_sampling_event(o.event, check)) {
    fprintf(stderr, "perf offwake record: %s\n", parse_sampling_event(o.event, check).error().message().c_str());
    return kExitUsage;
  }
  if (o.chain_depth < 1 || o.chain_depth > OFFWAKE_MAX_CHAIN_DEPTH) {
    fprintf(stderr, "perf offwake record: --chain-depth must be from 1 to %d\n", OFFWAKE_MAX_CHAIN_DEPTH);
    return kExitUsage;
  }
  if (o.ringbuf_mb == 0 || (o.ringbuf_mb & (o.ringbuf_mb - 1)) || o.ringbuf_mb > 1024) {
    fprintf(stderr, "perf offwake record: --ringbuf-size must be a power of two from 1 to 1024 MiB\n");
    return kExitUsage;
  }
  if (auto m = parse_state_letters(o.state); !m) {
    fprintf(stderr, "perf offwake record: %s\n", m.error().message().c_str());
    return kExitUsage;
  }
  bpf::set_libbpf_verbosity(o.verbose ? 1 : 0);

  // A command that cannot run fails before anything is loaded or renamed.
  if (!parsed.rest.empty()) {
    if (Status c = Workload::check_command(parsed.rest[0]); !c) {
      fprintf(stderr, "perf offwake record: %s\n", c.error().message().c_str());
      return Workload::exec_failure_status(c.error().errnum());
    }
  }
  if (Status moved = move_old_output(o.output); !moved) {
    fprintf(stderr, "perf offwake record: %s\n", moved.error().message().c_str());
    return kExitFailure;
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Started as `perf offwake record`: stop as on SIGTERM when perf dies.
  follow_parent_perf(SIGTERM);

  std::vector<std::string> argv = {"perf", "offwake"};
  argv.insert(argv.end(), args.begin(), args.end());
  Recorder rec(o);
  Status s = rec.run(parsed.rest, argv);
  if (!s) {
    fprintf(stderr, "perf offwake record: %s\n", s.error().message().c_str());
    // As a shell: 127 for a command not found, 126 for one that cannot run.
    return rec.exec_errno() ? Workload::exec_failure_status(rec.exec_errno()) : kExitFailure;
  }
  if (!o.quiet) print_record_summary(stderr, rec.stats());
  if (rec.workload_signal())
    fprintf(stderr, "[ perf offwake record: the command was killed by signal %d (%s); the recording up to then is kept ]\n",
            rec.workload_signal(), strsignal(rec.workload_signal()));
  else if (!parsed.rest.empty() && rec.workload_status() != 0)
    fprintf(stderr, "[ perf offwake record: the command exited with status %d ]\n", rec.workload_status());
  return rec.workload_status();  // like perf record: the workload's exit status (128 + N for signal N)
}

}  // namespace

int run_record(const std::vector<std::string>& args) { return cmd_record(args); }

}  // namespace offwake
