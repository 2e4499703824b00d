#include "record/recording.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>

#include "bpf/offwake_loader.h"
#include "record/block_source.h"
#include "record/exit_times.h"
#include "record/bpf_blocks.h"
#include "record/offwake_file.h"
#include "record/switch_output.h"
#include "record/targets.h"
#include "record/tracepoint_blocks.h"
#include "record/workload.h"
#include "unwind_row.h"
#include "samples/block_writer.h"
#include "samples/offwake_events.h"
#include "synth/build_id_dir.h"
#include "synth/cgroups.h"
#include "synth/host_info.h"
#include "synth/kernel_maps.h"
#include "synth/proc_maps.h"
#include "synth/process_descriptions.h"
#include "tracking/tracking_events.h"
#include "unwind/dwarf_unwinder.h"

namespace offwake {

std::string bpf_only_option(const RecordOptions& o) {
  if (o.chain_depth > 1) return "--chain-depth";
  for (const char* name : {"--eager", "--check-replays", "--bpf-stats", "--user-walker", "--unwind-memory", "--cgroup",
                           "--stack-storage-size", "--map-size", "--process-map-size", "--ringbuf-size"})
    if (o.given.count(name)) return name;
  return "";
}

// --call-graph fp|dwarf[,SIZE]: the bytes of user stack each event copies (dwarf: SIZE rounded
// up to whole u64s, 8192 by default, as perf), 0 for fp; an error for anything else.
static Result<uint32_t> user_stack_copy(const std::string& call_graph) {
  if (call_graph == "fp") return 0u;
  if (call_graph == "dwarf") return 8192u;
  constexpr unsigned long kMax = 65528;  // perf's: a record's size is a u16
  if (call_graph.starts_with("dwarf,")) {
    const std::string size = call_graph.substr(6);
    char* end = nullptr;
    const unsigned long n = strtoul(size.c_str(), &end, 0);
    if (!size.empty() && *end == 0 && n > 0 && n <= kMax) return static_cast<uint32_t>((n + 7) / 8 * 8);
    return Error::usage("--call-graph dwarf,SIZE takes 1 to " + std::to_string(kMax) + " bytes, not '" + size + "'");
  }
  return Error::usage("--call-graph takes fp or dwarf[,SIZE], not '" + call_graph + "'");
}

namespace {
constexpr uint64_t kMaxMapEntries = 1u << 24;
constexpr double kMaxDurationSecs = 1.8e10;  // its nanoseconds fit in 64 bits
}  // namespace

std::string record_usage_error(const RecordOptions& o) {
  if (auto copy = user_stack_copy(o.call_graph); !copy) return copy.error().message();
  else if (*copy && o.backend != "tracepoint" && !o.on_cpu)
    return "--call-graph dwarf needs --on-cpu (its samples' user stacks) or --backend tracepoint";
  if (o.backend != "bpf" && o.backend != "tracepoint" && o.backend != "auto")
    return "--backend takes bpf, tracepoint or auto, not '" + o.backend + "'";
  if (std::string option = bpf_only_option(o); o.backend == "tracepoint" && !option.empty())
    return option + " needs the BPF back end (not --backend tracepoint)";
  if (o.backend == "bpf" && o.given.count("--mmap-pages"))
    return "--mmap-pages sizes the tracepoint back end's ring buffers (not --backend bpf)";
  if (o.mmap_pages == 0 || (o.mmap_pages & (o.mmap_pages - 1)) || o.mmap_pages > (1u << 20))
    return "--mmap-pages must be a power of two from 1 to 1048576";
  if (o.user_only && o.kernel_only) return "--user-threads-only and --kernel-threads-only exclude each other";
  if (o.user_walker != "auto" && o.user_walker != "fp" && o.user_walker != "kernel")
    return "--user-walker takes auto, fp or kernel, not '" + o.user_walker + "'";
  if (o.unwind_memory_mb == 0 || o.unwind_memory_mb > 4096) return "--unwind-memory must be from 1 to 4096 MiB";
  if (o.buildid_cache_mb == 0 || o.buildid_cache_mb > (1u << 20))
    return "--buildid-cache-max must be from 1 to 1048576 MiB (--no-buildid-cache for none)";
  if (o.process_entries == 0 || o.process_entries > (1u << 24))
    return "--process-map-size must be from 1 to 16777216";
  // Map sizes are 32-bit in the kernel: a larger value must not wrap around.
  if (o.stack_entries == 0 || o.stack_entries > kMaxMapEntries)
    return "--stack-storage-size must be from 1 to " + std::to_string(kMaxMapEntries);
  if (o.map_entries == 0 || o.map_entries > kMaxMapEntries)
    return "--map-size must be from 1 to " + std::to_string(kMaxMapEntries);
  if (o.given.count("--max-stack") && (o.max_stack == 0 || o.max_stack > OFFWAKE_MAX_STACK_DEPTH))
    return "--max-stack must be from 1 to " + std::to_string(OFFWAKE_MAX_STACK_DEPTH);
  if (!(o.duration <= kMaxDurationSecs)) return "--duration takes 0 (no limit) to 1.8e10 seconds";
  if (std::string e = durations_error(o.min_block_us, o.max_block_us, o.sample_period_us); !e.empty()) return e;
  if (!o.on_cpu && (o.given.count("--freq") || o.given.count("--count") || o.given.count("--event")))
    return "-e, -F and -c go with --on-cpu";
  if (o.given.count("--freq") && o.given.count("--count")) return "-F and -c exclude each other";
  if (o.given.count("--freq") && o.frequency == 0) return "-F must be at least 1 Hz";
  if (o.given.count("--count") && o.period == 0) return "-c must be at least 1";
  if (auto max = perf_event_max_sample_rate(); max && o.frequency > *max)
    return "-F " + std::to_string(o.frequency) + " is above kernel.perf_event_max_sample_rate (" +
           std::to_string(*max) + " Hz)";
  if (SamplingConfig check; o.on_cpu) {
    if (Status s = parse_sampling_event(o.event, check); !s) return s.error().message();
  }
  if (o.chain_depth < 1 || o.chain_depth > OFFWAKE_MAX_CHAIN_DEPTH)
    return "--chain-depth must be from 1 to " + std::to_string(OFFWAKE_MAX_CHAIN_DEPTH);
  if (o.ringbuf_mb == 0 || (o.ringbuf_mb & (o.ringbuf_mb - 1)) || o.ringbuf_mb > 1024)
    return "--ringbuf-size must be a power of two from 1 to 1024 MiB";
  if (o.given.count("--ringbuf-size") && !o.timeline) return "--ringbuf-size goes with --timeline";
  if (auto m = parse_state_letters(o.state); !m) return m.error().message();
  if (o.given.count("--switch-output")) {
    if (auto spec = parse_switch_output(o.switch_output); !spec) return spec.error().message();
    if (o.output == "-")
      return "--switch-output writes files: not to standard output (-o -, or no -o with standard output a pipe)";
    if (output_is_stream(o.output)) return "--switch-output writes files: not into a FIFO (" + o.output + ")";
  }
  if (o.given.count("--switch-max-files")) {
    if (!o.given.count("--switch-output")) return "--switch-max-files goes with --switch-output";
    if (auto n = parse_switch_max_files(o.switch_max_files); !n) return n.error().message();
  }
  return "";
}

namespace {

// The unwind tables describe x86-64 code; elsewhere auto walks by frame pointer.
#if defined(__x86_64__)
constexpr bool kUnwindTablesHere = true;
#else
constexpr bool kUnwindTablesHere = false;
#endif

// The first line of a message (a failed BPF load's carries libbpf's log after it).
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// The fields of RecordStats that the back end and the tracking events count over the whole
// recording (BlockSource::fill_stats()), as against those counted as a file is written.
void copy_source_counts(RecordStats& to, const RecordStats& from) {
  to.counters = from.counters;
  to.skipped_switches = from.skipped_switches;
  to.skipped_wakeups = from.skipped_wakeups;
  to.skipped_other = from.skipped_other;
  to.tracking_undecodable = from.tracking_undecodable;
  to.tracepoint = from.tracepoint;
  to.tracepoint_lost = from.tracepoint_lost;
  to.tracepoint_late = from.tracepoint_late;
  to.tracepoint_undecodable = from.tracepoint_undecodable;
  to.callchains_cut = from.callchains_cut;
  to.stack_store_emptied = from.stack_store_emptied;
  to.stacks_emptied = from.stacks_emptied;
  to.user_unwind = from.user_unwind;
  to.unwind = from.unwind;  // the tables as they are now: not a count of the window's
  to.bpf_time = from.bpf_time;
}

// What the unwinder of stack copies must know of the processes, from the tracking records:
// their mappings, forks, execs and exits.
void follow_processes(unwind::DwarfUnwinder& u, const perfdata::Record& r) {
  if (const auto* m = std::get_if<perfdata::Mmap2Record>(&r)) {
    u.mmap(*m);
  } else if (const auto* t = std::get_if<perfdata::TaskRecord>(&r)) {
    if (t->exit) u.exit(t->pid, t->tid);
    else if (t->pid != t->ppid) u.fork(t->ppid, t->pid);  // a new process, not a new thread
  } else if (const auto* c = std::get_if<perfdata::CommRecord>(&r); c && c->exec) {
    u.exec(c->pid);
  }
}

// a = op(a, b), field by field, for a struct of uint64_t counts (std::plus, std::minus).
template <class T, class Op>
void combine_counts(T& a, const T& b, Op op) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % sizeof(uint64_t) == 0);
  uint64_t x[sizeof(T) / sizeof(uint64_t)], y[sizeof(T) / sizeof(uint64_t)];
  std::memcpy(x, &a, sizeof a);
  std::memcpy(y, &b, sizeof b);
  for (size_t i = 0; i < std::size(x); ++i) x[i] = op(x[i], y[i]);
  std::memcpy(&a, x, sizeof a);
}

// --switch-output: a window's share of the whole recording's counts, `now` less `before` (the
// counts at the window's start).
void window_source_counts(RecordStats& w, const RecordStats& now, const RecordStats& before) {
  copy_source_counts(w, now);
  combine_counts(w.counters, before.counters, std::minus<>());
  combine_counts(w.user_unwind, before.user_unwind, std::minus<>());
  w.skipped_switches -= before.skipped_switches;
  w.skipped_wakeups -= before.skipped_wakeups;
  w.skipped_other -= before.skipped_other;
  w.tracking_undecodable -= before.tracking_undecodable;
  w.tracepoint_lost -= before.tracepoint_lost;
  w.tracepoint_late -= before.tracepoint_late;
  w.tracepoint_undecodable -= before.tracepoint_undecodable;
  w.callchains_cut -= before.callchains_cut;
  w.stack_store_emptied -= before.stack_store_emptied;
  w.stacks_emptied -= before.stacks_emptied;
  w.bpf_time.subtract(before.bpf_time);
}

// The counts of a window's file added to the recording's.
void add_written_counts(RecordStats& total, const RecordStats& w) {
  total.sample_period_ns = w.sample_period_ns;  // the same in every file
  total.duration_ns += w.duration_ns;
  total.keys += w.keys;
  total.offwake_samples += w.offwake_samples;
  total.timeline_events += w.timeline_events;
  total.blocked_ns += w.blocked_ns;
  total.kernel_missing += w.kernel_missing;
  total.user_missing += w.user_missing;
  total.sample_stacks += w.sample_stacks;
  total.on_cpu_samples += w.on_cpu_samples;
  total.perf_lost += w.perf_lost;
  total.cgroups_described += w.cgroups_described;
  total.cgroups_unnamed += w.cgroups_unnamed;
  total.bytes += w.bytes;
  total.buildid_cache = w.buildid_cache;  // the whole recording's so far
}

// The recording, with its resources in set-up order (torn down in reverse).
class Recorder {
 public:
  Recorder(const RecordOptions& o, const volatile sig_atomic_t& stop, volatile sig_atomic_t* switch_now)
      : opt_(o), stop_(stop), switch_now_(switch_now) {
    if (o.given.count("--switch-output")) switch_ = parse_switch_output(o.switch_output).value();  // checked
    if (switching())
      files_.emplace(o.given.count("--switch-max-files") ? parse_switch_max_files(o.switch_max_files).value() : 0);
  }
  Status run(const std::vector<std::string>& command, const std::vector<std::string>& argv);
  // The recording's counts: with --switch-output, every window's.
  const RecordStats& stats() const { return switching() ? total_ : stats_; }
  uint64_t files() const { return files_ ? files_->count() : 0; }
  int workload_status() const { return workload_status_; }
  int workload_signal() const { return workload_signal_; }
  // The errno of a command that could not be run (0 if none).
  int exec_errno() const { return exec_errno_; }

 private:
  BlockFilters filters() const;
  bpf::LoaderOptions loader_options() const;
  UnwindSeed unwind_seed() const;
  TracepointBlockOptions tracepoint_options() const;
  Status open_source();
  Status drain_tracking();
  bool wanted_on_cpu(const perfdata::SampleRecord& s);
  bool targets_gone() const;
  Status check_targets_alive() const;
  Status write_on_cpu(const perfdata::SampleRecord& s);
  void add_tracking_counts(RecordStats& now) const;
  Status write_aggregates(uint64_t time);
  bool switching() const { return switch_.mode != SwitchOutputSpec::Mode::kOff; }
  bool switch_due();
  Status switch_file(const BlockSource::EventFn& write_event);
  Status open_file(const ProcessDescriptions* previous);
  Status close_file(uint64_t time);
  bool system_wide() const;
  bool command_is_target() const;
  bool command_recorded() const;
  Status describe_targets();
  Status describe(const std::vector<perfdata::SampleRecord>& samples);
  Status write_description(const perfdata::Record& r);

  const RecordOptions& opt_;
  const volatile sig_atomic_t& stop_;
  volatile sig_atomic_t* switch_now_;
  SwitchOutputSpec switch_;
  std::optional<SwitchedFiles> files_;
  std::optional<Kallsyms> kallsyms_;
  std::optional<Workload> workload_;
  std::unique_ptr<BlockSource> source_;
  std::optional<TrackingEvents> tracking_;
  // --on-cpu with --call-graph dwarf: the samples' user stack copies, unwound as they come.
  std::optional<unwind::DwarfUnwinder> on_cpu_unwinder_;
  ExitTimes exits_;
  // What every file of the recording starts with.
  std::vector<perfdata::EventDesc> events_;
  perfdata::HostInfo host_;
  std::optional<perfdata::Mmap2Record> kernel_mmap_;
  // The current file's (with --switch-output, the window's; each file names its own threads).
  std::optional<perfdata::PerfDataWriter> writer_;
  std::optional<BuildIdCache> build_ids_;
  // The recording's, across files: perf's build-id cache (none with --no-buildid-cache).
  std::optional<BuildIdDir> binaries_;
  std::optional<ProcessDescriptions> descriptions_;
  CgroupNames cgroups_;  // the samples' cgroups, described in each file
  std::optional<BlockWriter> blocks_;
  std::set<uint32_t> pseudo_described_;
  std::string command_;  // the command's name, as given
  OffwakeEventIds ids_;
  RecordStats stats_;       // the current file's
  RecordStats at_start_;    // the source's counts when the current file's window started
  RecordStats total_;       // --switch-output: the files closed so far, summed
  uint64_t window_start_ = 0, next_switch_ns_ = 0;
  int workload_status_ = 0, workload_signal_ = 0, exec_errno_ = 0;
};

// The filters on the blocked thread, the same for either back end.
BlockFilters Recorder::filters() const {
  BlockFilters f;
  if (command_is_target()) {
    f.tgids.insert(static_cast<uint32_t>(workload_->pid()));
    f.follow_forks = true;
  }
  f.tgids.insert(opt_.pids.begin(), opt_.pids.end());
  f.tids.insert(opt_.tids.begin(), opt_.tids.end());
  f.user_threads_only = opt_.user_only;
  f.kernel_threads_only = opt_.kernel_only;
  f.state_mask = parse_state_letters(opt_.state).value();  // checked by record_usage_error()
  set_durations(f, opt_.min_block_us, opt_.max_block_us, opt_.sample_period_us);
  return f;
}

bpf::LoaderOptions Recorder::loader_options() const {
  bpf::LoaderOptions lo;
  static_cast<BlockFilters&>(lo) = filters();
  lo.max_tgids = static_cast<uint32_t>(opt_.process_entries);
  // -t's threads' processes are the targets (their unwind tables, the processes outside them
  // that get tables on request); the programs filter by both sets.
  for (uint32_t tid : lo.tids) lo.tgids.insert(tgid_of(tid).value_or(tid));
  lo.eager = opt_.eager;
  lo.sched_frames = opt_.sched_frames;
  lo.check_replays = opt_.check_replays;
  lo.run_time_stats = opt_.bpf_stats;
  lo.kernel_user_walker = opt_.user_walker == "kernel";
  lo.unwind_tables = opt_.user_walker == "auto" && kUnwindTablesHere;
  lo.unwind_rows = static_cast<uint32_t>((opt_.unwind_memory_mb << 20) / sizeof(offwake_unwind_row));
  lo.cgroup_path = opt_.cgroup.empty() ? "" : cgroup_dir(opt_.cgroup);
  lo.stack_map_entries = static_cast<uint32_t>(opt_.stack_entries);
  lo.aggregate_entries = static_cast<uint32_t>(opt_.map_entries);
  lo.max_stack_depth = static_cast<uint32_t>(opt_.max_stack);
  lo.timeline = opt_.timeline;
  lo.ringbuf_bytes = static_cast<uint32_t>(opt_.ringbuf_mb << 20);
  lo.chain_depth = static_cast<uint32_t>(opt_.chain_depth);
  lo.switch_windows = switching();
  return lo;
}

// The processes whose tables are built before the programs attach: -p's, -t's process, or every
// process when the recording is not about a command (system-wide, or a cgroup). A command gets
// its tables once exec'd, from its MMAP2 records.
UnwindSeed Recorder::unwind_seed() const {
  UnwindSeed seed;
  seed.pids = opt_.pids;
  for (uint32_t tid : opt_.tids) {
    const uint32_t pid = tgid_of(tid).value_or(tid);
    if (std::find(seed.pids.begin(), seed.pids.end(), pid) == seed.pids.end()) seed.pids.push_back(pid);
  }
  seed.all = seed.pids.empty() && !command_is_target();
  if (command_recorded()) seed.command = Workload::path_of(command_);
  return seed;
}

TracepointBlockOptions Recorder::tracepoint_options() const {
  TracepointBlockOptions t;
  static_cast<BlockFilters&>(t.pairer) = filters();
  if (opt_.timeline) t.pairer.timeline = [](const offwake_event&) {};  // the back end routes it
  t.sched_frames = opt_.sched_frames;
  uint32_t depth = 127;
  if (auto sysctl = bpf::perf_event_max_stack()) depth = *sysctl;
  if (opt_.max_stack && opt_.max_stack < depth) depth = static_cast<uint32_t>(opt_.max_stack);
  t.tracepoints.max_stack = static_cast<uint16_t>(std::min<uint32_t>(depth, UINT16_MAX));
  t.tracepoints.mmap_pages = static_cast<unsigned>(opt_.mmap_pages);
  t.tracepoints.user_stack_copy = user_stack_copy(opt_.call_graph).value();  // checked by record_usage_error()
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
  auto bpf = load_bpf_blocks(loader_options(), unwind_seed());
  if (bpf) {
    source_ = std::move(bpf).value();
    return ok_status();
  }
  if (opt_.backend == "bpf" || !bpf.error().is(ErrorKind::kUnavailable)) return bpf.error();
  const std::string why = first_line(bpf.error().message());
  if (std::string option = bpf_only_option(opt_); !option.empty())
    return Error::unavailable("the BPF programs cannot be loaded (" + why + "), and " + option + " needs them");
  auto tp = open_tracepoint_blocks(tracepoint_options());
  if (!tp)
    return Error::unavailable("the BPF programs cannot be loaded (" + why + "), nor the scheduler tracepoints (" +
                 first_line(tp.error().message()) + ")");
  // Said once the tracepoints are open: a failure of both is one line.
  fprintf(stderr, "perf offwake record: BPF unavailable (%s): using the scheduler tracepoints (--backend tracepoint)\n",
          why.c_str());
  source_ = std::move(tp).value();
  return ok_status();
}

// -p or -t (with a command or not): whether every process (or thread) given has exited,
// which ends the recording (and a command still running, as at any stop), as perf record's
// does. Their children that live on are not waited for.
bool Recorder::targets_gone() const {
  if (command_is_target() || (opt_.pids.empty() && opt_.tids.empty())) return false;
  if (!opt_.tids.empty()) return std::all_of(opt_.tids.begin(), opt_.tids.end(), thread_exited);
  return std::all_of(opt_.pids.begin(), opt_.pids.end(), process_exited);
}

// Loading the BPF programs takes a second or more: -p's processes (or -t's threads) may all
// exit meanwhile, and the recording would be empty without a word. perf record fails then
// (perf_event_open: No such process), and so does this, before the programs attach: one line,
// status 1, nothing written.
Status Recorder::check_targets_alive() const {
  if (!targets_gone()) return ok_status();
  const std::vector<uint32_t>& ids = opt_.tids.empty() ? opt_.pids : opt_.tids;
  std::string list;
  for (uint32_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  const char* what = opt_.tids.empty() ? (ids.size() > 1 ? "PIDs " : "PID ") : (ids.size() > 1 ? "threads " : "thread ");
  return Error(what + list + " exited before the recording began");
}

// On-CPU samples are taken on every CPU; keep those of the threads being recorded.
bool Recorder::wanted_on_cpu(const perfdata::SampleRecord& s) {
  if (!opt_.tids.empty()) return std::find(opt_.tids.begin(), opt_.tids.end(), s.tid) != opt_.tids.end();
  if (opt_.pids.empty() && !command_is_target()) return true;
  return source_->is_target(s.pid);
}

// An on-CPU sample goes to the file as it came, or (--call-graph dwarf) with the user frames
// unwound from its stack copy in its callchain, and the copy left out (the file's event asks
// for none: drop_user_stack_copy()).
Status Recorder::write_on_cpu(const perfdata::SampleRecord& s) {
  if (!on_cpu_unwinder_) return writer_->write(s);
  perfdata::SampleRecord unwound = s;
  on_cpu_unwinder_->unwind(unwound.pid, unwound.tid, unwound.user_stack, unwound.callchain);
  unwound.user_stack = {};
  return writer_->write(unwound);
}

// What the tracking events counted, into the back end's counts `now`.
void Recorder::add_tracking_counts(RecordStats& now) const {
  now.tracking_undecodable = tracking_->undecodable();
  if (on_cpu_unwinder_) combine_counts(now.user_unwind, on_cpu_unwinder_->counts(), std::plus<>());
}

Status Recorder::drain_tracking() {
  auto emit = [this](const perfdata::Record& d) { return write_description(d); };
  return tracking_->drain([&](const perfdata::Record& r) -> Status {
    source_->tracking(r);
    if (on_cpu_unwinder_) follow_processes(*on_cpu_unwinder_, r);
    // perf orders an EXIT by its sample_id's time (a little before the record's own field).
    if (const auto* t = std::get_if<perfdata::TaskRecord>(&r); t && t->exit)
      exits_.exited(t->tid, t->sample_id.time ? t->sample_id.time : t->time);
    if (const auto* s = std::get_if<perfdata::SampleRecord>(&r)) {
      if (!wanted_on_cpu(*s)) return ok_status();
      ++stats_.on_cpu_samples;
      OFFWAKE_TRY(descriptions_->describe(s->pid, emit));
      OFFWAKE_TRY(cgroups_.describe(s->cgroup, emit));
      return write_on_cpu(*s);
    }
    // A cgroup made while recording: its path, for the samples that name it.
    if (const auto* g = std::get_if<perfdata::CgroupRecord>(&r)) cgroups_.observe(*g);
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
  for (uint32_t tid : opt_.tids) OFFWAKE_TRY(check_thread(tid));

  if (!command.empty()) {
    if (Status s = Workload::check_command(command[0]); !s) {
      exec_errno_ = s.error().errnum();
      return s;
    }
    command_ = command[0];
    auto w = Workload::prepare(command, opt_.output == "-");
    if (!w) return w.error();
    workload_.emplace(std::move(w).value());
  }
  OFFWAKE_TRY(open_source());

  SamplingConfig sampling;
  if (opt_.on_cpu) {
    OFFWAKE_TRY(parse_sampling_event(opt_.event, sampling));
    sampling.use_frequency = opt_.period == 0;
    if (opt_.frequency) {
      sampling.frequency = opt_.frequency;  // checked against the kernel's limit by record_usage_error()
    } else if (auto max = perf_event_max_sample_rate(); max && *max < sampling.frequency) {
      // As perf record: the default is lowered to what the kernel allows now.
      fprintf(stderr, "perf offwake record: kernel.perf_event_max_sample_rate is %llu Hz: --on-cpu samples at that\n",
              static_cast<unsigned long long>(*max));
      sampling.frequency = *max;
    }
    sampling.period = opt_.period;
    sampling.max_stack = static_cast<uint16_t>(source_->stack_depth());
    sampling.user_stack_copy = user_stack_copy(opt_.call_graph).value();  // checked by record_usage_error()
    if (sampling.user_stack_copy)
      on_cpu_unwinder_.emplace(unwind::DwarfUnwinderOptions{source_->stack_depth(), true});
  }
  // Stack copies of every on-CPU sample (8 KiB each by default, 4000 a second a CPU) need
  // room for the 100 ms between two drains.
  const unsigned tracking_pages = sampling.user_stack_copy ? 2048 : 128;
  auto tracking = TrackingEvents::open(opt_.on_cpu ? &sampling : nullptr, tracking_pages, opt_.namespaces);
  if (!tracking) return tracking.error();
  tracking_.emplace(std::move(tracking).value());

  events_ = offwake_events(ids_ = pick_event_ids(tracking_->events(), opt_.chain_depth > 1));
  for (perfdata::EventDesc e : tracking_->events()) {
    if (on_cpu_unwinder_) drop_user_stack_copy(e.attr);
    events_.push_back(std::move(e));
  }
  host_ = collect_host_info(argv);

  // Tracking first, then what already exists: a mapping made in between is seen twice,
  // never missed.
  tracking_->enable();
  auto kallsyms = Kallsyms::load();
  if (!kallsyms) return kallsyms.error();
  kallsyms_.emplace(std::move(kallsyms).value());
  auto kmap = kernel_mmap(*kallsyms_);
  if (!kmap) return kmap.error();
  kernel_mmap_ = std::move(kmap).value();
  if (!opt_.no_buildid_cache) binaries_.emplace(build_id_dir(), opt_.buildid_cache_mb << 20);
  OFFWAKE_TRY(open_file(nullptr));

  OFFWAKE_TRY(check_targets_alive());
  OFFWAKE_TRY(source_->start());
  // Loading and describing what exists take a second or more: with -v, the moment recording
  // begins (a script can start its workload then).
  if (opt_.verbose) fprintf(stderr, "[ perf offwake record: recording (%s back end) ]\n", source_->name());
  const uint64_t start = monotonic_ns();
  window_start_ = start;
  if (switch_.mode == SwitchOutputSpec::Mode::kTime) next_switch_ns_ = start + switch_.interval_ns;
  if (workload_) {
    // With unwind tables, the command waits at its entry point until its code has them.
    Status drained = ok_status();
    Status s = command_recorded() && opt_.user_walker == "auto" && source_->name() == std::string("bpf")
                   ? workload_->start_held([&] {
                       drained = drain_tracking();
                       source_->settle_tracking();
                     })
                   : workload_->start();
    if (!s) {
      exec_errno_ = workload_->exec_errno();
      return s;
    }
    OFFWAKE_TRY(drained);
  }

  auto write_event = [this](const offwake_event& e) { return blocks_->write(e); };
  const uint64_t deadline = opt_.duration > 0 ? start + static_cast<uint64_t>(opt_.duration * 1e9) : 0;
  while (!stop_) {
    // Wait for events at most 100 ms, and no later than --duration's end: the stop is on time.
    if (!source_->paced()) {
      // With unwind tables (--user-walker=auto) the MMAP2 records are read every 10 ms, so
      // that a process that starts meanwhile has tables before it has blocked much (at 100
      // ms, a python3 started during a system-wide recording had its first 45 of 300 sleeps
      // of 2 ms walked by frame pointers, cut after a frame); a command's every 2 ms in its
      // first second, its start-up.
      int wait_ms = 100;
      if (opt_.user_walker == "auto")
        wait_ms = command_recorded() && monotonic_ns() - start < 1'000'000'000ull ? 2 : 10;
      auto wait_until = [](uint64_t until) {
        const uint64_t now = monotonic_ns();
        return now >= until ? 0 : static_cast<int>(std::min<uint64_t>(100, (until - now + 999'999) / 1'000'000));
      };
      if (deadline) wait_ms = std::min(wait_ms, wait_until(deadline));
      // --switch-output=TIME: no later than the window's end either.
      if (next_switch_ns_) wait_ms = std::min(wait_ms, wait_until(next_switch_ns_));
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
    if (targets_gone()) break;
    if (deadline && monotonic_ns() >= deadline) break;
    if (switch_due()) OFFWAKE_TRY(switch_file(write_event));
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
  const uint64_t end = monotonic_ns();
  OFFWAKE_TRY(write_aggregates(end));
  return close_file(end);
}

// --switch-output: whether the window ends now (SIGUSR2, its time, its file's size).
bool Recorder::switch_due() {
  switch (switch_.mode) {
    case SwitchOutputSpec::Mode::kOff: return false;
    case SwitchOutputSpec::Mode::kSignal:
      if (!switch_now_ || !*switch_now_) return false;
      *switch_now_ = 0;
      return true;
    case SwitchOutputSpec::Mode::kTime: return monotonic_ns() >= next_switch_ns_;
    case SwitchOutputSpec::Mode::kSize: return writer_->position() >= switch_.bytes;
  }
  return false;
}

// Ends the window: what the scheduler and the kernel reported so far goes into its file, then
// the blocks that ended in it (the source starts the next window with none), its counts and
// the file's end; then the next window's file starts, describing again what it needs.
Status Recorder::switch_file(const BlockSource::EventFn& write_event) {
  OFFWAKE_TRY(source_->read());
  OFFWAKE_TRY(drain_tracking());
  OFFWAKE_TRY(source_->step(write_event));
  const uint64_t time = monotonic_ns();
  RecordStats now;
  OFFWAKE_TRY(source_->switch_window(
      [&](std::span<const Aggregate> batch) { return blocks_->write(batch, time); },
      now));
  add_tracking_counts(now);
  window_source_counts(stats_, now, at_start_);
  at_start_ = now;
  OFFWAKE_TRY(close_file(time));
  // The window that ended describes the processes that exited in it to the next one.
  std::optional<ProcessDescriptions> previous = std::move(descriptions_);
  descriptions_.reset();
  OFFWAKE_TRY(open_file(previous ? &*previous : nullptr));
  window_start_ = time;
  if (switch_.mode == SwitchOutputSpec::Mode::kTime) {
    // The next switch is a whole interval after this one: a late switch (a slow write)
    // does not make the next window short.
    next_switch_ns_ = std::max(next_switch_ns_ + switch_.interval_ns, time + switch_.interval_ns / 2);
  }
  return ok_status();
}

// A file starts: its events, the kernel's map, the processes (all of them system-wide, else
// the recording's targets; the others as samples name them), with --switch-output those that
// the previous window saw exit. Then the samples' writer, with counts of its own.
Status Recorder::open_file(const ProcessDescriptions* previous) {
  Result<perfdata::PerfDataWriter> writer = Error("no output");
  if (output_is_stream(opt_.output)) {
    auto fd = open_output_stream(opt_.output);
    if (!fd) return fd.error();
    writer = perfdata::PerfDataWriter::create_pipe(std::move(fd).value(), events_, host_, output_name(opt_.output));
  } else {
    writer = perfdata::PerfDataWriter::create_file(opt_.output, events_, host_);
  }
  if (!writer) return writer.error();
  writer_.emplace(std::move(writer).value());
  OFFWAKE_TRY(writer_->write(*kernel_mmap_));
  writer_->add_build_id(kernel_build_id_entry());
  // A cache per file: the build ids of binaries no longer mapped do not pile up.
  build_ids_.emplace();
  auto emit = [this](const perfdata::Record& r) { return write_description(r); };
  auto descriptions = ProcessDescriptions::take(*build_ids_, !system_wide(), emit,
                                                ProcessDescriptions::kDefaultHoldLimit, switching(), opt_.namespaces);
  if (!descriptions) return descriptions.error();
  descriptions_.emplace(std::move(descriptions).value());
  if (previous) {
    auto carried = descriptions_->carry_gone(*previous, emit);
    if (!carried) return carried.error();
  }
  pseudo_described_.clear();
  OFFWAKE_TRY(cgroups_.begin_file(emit));
  OFFWAKE_TRY(describe_targets());
  OFFWAKE_TRY(writer_->finished_init());
  stats_ = RecordStats{};
  stats_.sample_period_ns = filters().sample_period_ns;
  blocks_.emplace(
      *writer_, source_->stacks(), ids_, &*kallsyms_, stats_,
      [this](const std::vector<perfdata::SampleRecord>& s) { return describe(s); },
      [this](uint32_t tid) { return exits_.of(tid); });
  return ok_status();
}

// The current file ends (its counts in stats_ are final but for the writer's): the lost
// blocks and the counts go in, and it gets its name (with --switch-output, the -o name with
// perf's timestamp; the oldest beyond --switch-max-files are removed).
Status Recorder::close_file(uint64_t time) {
  stats_.duration_ns = time - window_start_;
  if (binaries_) stats_.buildid_cache = binaries_->counts();
  stats_.cgroups_described = cgroups_.described();
  stats_.cgroups_unnamed = cgroups_.unnamed();
  OFFWAKE_TRY(blocks_->finish(time));
  blocks_.reset();
  const std::string path = switching() ? files_->next_name(opt_.output) : opt_.output;
  // With --switch-output each file has a name of its own: nothing to move aside.
  OFFWAKE_TRY(writer_->close_as(path, switching() ? perfdata::PerfDataWriter::BeforeCommit{} : move_old_output));
  stats_.bytes = writer_->stats().bytes;
  stats_.output = opt_.output == "-" ? "(pipe)" : path;
  writer_.reset();
  if (!switching()) return ok_status();
  OFFWAKE_TRY(files_->written(path));
  add_written_counts(total_, stats_);
  copy_source_counts(total_, at_start_);  // the whole recording's, so far
  total_.output = std::to_string(files_->count()) + " files" +
                  (files_->removed() ? " (" + std::to_string(files_->removed()) + " removed by --switch-max-files)" : "") +
                  ", the last " + path;
  if (!opt_.quiet) {
    const offwake_counters& c = stats_.counters;
    const bool timeline = stats_.timeline_events != 0;
    // The window's missing stacks too: over a long recording the stack maps, shared by every
    // window, can fill, and the user should see it as it happens.
    const StackLosses missing = stats_.missing_stacks();
    fprintf(stderr,
            "[ perf offwake record: dump data: %llu blocks, %.3f s blocked, %llu %s, %llu blocks lost, %llu of %llu "
            "sample stacks missing (%llu store full) ]\n",
            static_cast<unsigned long long>(c.blocks), stats_.blocked_ns / 1e9,
            static_cast<unsigned long long>(timeline ? stats_.timeline_events : stats_.keys),
            timeline ? "timeline events" : "distinct stacks", static_cast<unsigned long long>(stats_.lost_blocks()),
            static_cast<unsigned long long>(missing.total()), static_cast<unsigned long long>(stats_.sample_stacks),
            static_cast<unsigned long long>(missing.map_full));
    fprintf(stderr, "[ perf offwake record: Dump %s ]\n", path.c_str());
  }
  return ok_status();
}

// Without -p, -t or a command that is the target (-G alone too): the whole machine, as perf
// record -a.
bool Recorder::system_wide() const {
  return opt_.all_cpus || (!command_is_target() && opt_.pids.empty() && opt_.tids.empty());
}

// As in perf record, a command is the target only when nothing else is (-a, -p, -t, -G): with
// one of those it is a timer, the recording lasting while it runs, and its blocks are not
// recorded (with -a or -G, as any other process's: if the machine or the cgroup takes them in).
bool Recorder::command_is_target() const {
  return workload_ && !opt_.all_cpus && opt_.pids.empty() && opt_.tids.empty() && opt_.cgroup.empty();
}

// Whether the command's blocks may be in the recording: then it is held until its code has
// unwind tables, and its start-up is read closely.
bool Recorder::command_recorded() const { return command_is_target() || (workload_ && system_wide()); }

// At the start, what perf record synthesizes: every process system-wide (written already),
// else the processes the recording is about (the command, not yet exec'd, or -p's). The
// others wait until a sample names them (describe()).
Status Recorder::describe_targets() {
  auto emit = [this](const perfdata::Record& r) { return write_description(r); };
  if (command_is_target()) OFFWAKE_TRY(descriptions_->describe(static_cast<uint32_t>(workload_->pid()), emit));
  for (uint32_t pid : opt_.pids) OFFWAKE_TRY(descriptions_->describe(pid, emit));
  return ok_status();
}

// Before a group of samples (a block, its waker and hops), the records that name their threads
// and cgroups, each once: a pseudo-waker's COMM, a process not described yet (a waker from
// outside, -t's process), a cgroup not described yet. What /proc said at the start is stamped
// with time 0, as perf stamps what it synthesizes, and the kernel's records with their time:
// perf sorts them before the samples that need them wherever they are in the file, for there
// are no FINISHED_ROUND records (see run()). Written before the group, which stays contiguous.
Status Recorder::describe(const std::vector<perfdata::SampleRecord>& samples) {
  auto emit = [this](const perfdata::Record& r) { return write_description(r); };
  for (const auto& s : samples) {
    OFFWAKE_TRY(cgroups_.describe(s.cgroup, emit));
    if (const PseudoWaker* p = pseudo_waker_of_tid(s.tid)) {
      if (pseudo_described_.insert(p->tid).second) OFFWAKE_TRY(write_pseudo_waker_comm(*writer_, ids_, *p));
      continue;
    }
    OFFWAKE_TRY(descriptions_->describe(s.pid, emit));
  }
  return ok_status();
}

// A record that describes a process goes into the file; a mapping of a file first gets what
// readers need to find its binary after the process is gone: its build id, read through the
// process when the kernel could not give it (the file may be in another mount namespace, where
// ours of that name is another file or none), and the binary itself in perf's build-id cache,
// read now, while the process is likely alive (the kernel's MMAP2 records come here as they
// are drained, those of processes alive at the start as /proc is read).
Status Recorder::write_description(const perfdata::Record& r) {
  const auto* m = std::get_if<perfdata::Mmap2Record>(&r);
  if (!m || m->pid == UINT32_MAX || !names_binary(m->filename) || (m->build_id.size && !binaries_))
    return writer_->write(r);
  perfdata::Mmap2Record mapping = *m;
  const MappedFile file = mapped_file(mapping);
  if (mapping.build_id.empty()) mapping.build_id = build_ids_->get(file, mapping.maj, mapping.min, mapping.ino);
  if (binaries_) {
    const perfdata::BuildId found = binaries_->add(file, mapping.build_id);
    if (mapping.build_id.empty()) mapping.build_id = found;
  }
  return writer_->write(mapping);
}

// The last window's aggregates, stamped `time` when they have no time of their own; close_file()
// then ends the file.
Status Recorder::write_aggregates(uint64_t time) {
  RecordStats now;
  OFFWAKE_TRY(source_->fill_stats(now));
  add_tracking_counts(now);
  window_source_counts(stats_, now, at_start_);
  at_start_ = now;
  // A batch at a time: a recording of 100,000 keys need not hold them all.
  return source_->visit_aggregates([&](std::span<const Aggregate> batch) { return blocks_->write(batch, time); });
}

}  // namespace

Result<RecordOutcome> record_offwake(const RecordOptions& o, const std::vector<std::string>& command,
                                     const std::vector<std::string>& argv, const volatile sig_atomic_t& stop,
                                     int& exec_errno, volatile sig_atomic_t* switch_now) {
  exec_errno = 0;
  if (std::string usage = record_usage_error(o); !usage.empty()) return Error::usage(usage);
  Recorder rec(o, stop, switch_now);
  Status s = rec.run(command, argv);
  exec_errno = rec.exec_errno();
  if (!s) return s.error();
  return RecordOutcome{rec.stats(), rec.files(), rec.workload_status(), rec.workload_signal()};
}

}  // namespace offwake
