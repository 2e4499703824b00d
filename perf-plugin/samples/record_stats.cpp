#include "samples/record_stats.h"

#include <algorithm>

#include "util/printable.h"

namespace offwake {

uint64_t RecordStats::lost_blocks() const {
  return counters.agg_map_full + counters.storage_failed_blocks + counters.ringbuf_drops + skipped_switches;
}

StackLosses RecordStats::missing_stacks() const {
  StackLosses m = kernel_missing;
  m += user_missing;
  return m;
}

uint64_t RecordStats::BpfTime::runs() const {
  uint64_t n = 0;
  for (const ProgramTime& p : programs) n += p.runs;
  return n;
}

uint64_t RecordStats::BpfTime::ns() const {
  uint64_t n = 0;
  for (const ProgramTime& p : programs) n += p.ns;
  return n;
}

void RecordStats::BpfTime::subtract(const BpfTime& before) {
  for (ProgramTime& p : programs) {
    for (const ProgramTime& b : before.programs) {
      if (b.program != p.program) continue;
      p.runs -= std::min(p.runs, b.runs);
      p.ns -= std::min(p.ns, b.ns);
    }
  }
}

uint64_t RecordStats::lost_wakeups() const { return counters.storage_failed_wakeups + skipped_wakeups; }

std::vector<std::pair<std::string, uint64_t>> RecordStats::fields() const {
  const offwake_counters& c = counters;
  std::vector<std::pair<std::string, uint64_t>> f = {
      {"duration_ns", duration_ns},
      {"sample_period_ns", sample_period_ns},
      {"sample_dropped_blocks", c.sample_dropped},
      {"sample_weighted_blocks", c.sample_weighted},
      {"aggregates", keys},
      {"blocked_ns", blocked_ns},
      {"blocks", c.blocks},
      {"wakeups", c.wakeups},
      {"irq_wakeups", c.irq_wakeups},
      {"runnable_wakeups_ignored", c.runnable_wakeups},
      {"missed_wakeups", c.missed_wakeups},
      {"late_block_ends", c.late_ends},
      {"untraced_switches", c.untraced_switches},
      {"still_blocked_at_stop", c.still_blocked},
      {"still_blocked_filtered", c.still_blocked_filtered},
      {"timeline_events", timeline_events},
      {"filtered_blocks", c.filtered},
      {"lost_blocks", lost_blocks()},
      {"lost_blocks_map_full", c.agg_map_full},
      {"lost_blocks_map_full_ns", c.agg_map_full_ns},
      {"lost_blocks_no_task_storage", c.storage_failed_blocks},
      {"lost_blocks_ringbuf_full", c.ringbuf_drops},
      {"lost_blocks_ringbuf_full_ns", c.ringbuf_drops_ns},
      {"lost_blocks_switch_skipped", skipped_switches},
      {"lost_wakeups", lost_wakeups()},
      {"lost_wakeups_no_task_storage", c.storage_failed_wakeups},
      {"lost_wakeups_skipped", skipped_wakeups},
      {"bpf_runs_skipped_other", skipped_other},
      {"forks_followed", c.forks_followed},
      {"forks_not_followed", c.forks_not_followed},
      {"targets_exited", c.targets_exited},
      {"kernel_stack_captures", c.stack_captures[OFFWAKE_KERNEL]},
      {"user_stack_captures", c.stack_captures[OFFWAKE_USER]},
      {"kernel_stack_collisions", c.stack_collision[OFFWAKE_KERNEL]},
      {"user_stack_collisions", c.stack_collision[OFFWAKE_USER]},
      {"kernel_stack_store_fallbacks", c.stack_store_fallbacks[OFFWAKE_KERNEL]},
      {"user_stack_store_fallbacks", c.stack_store_fallbacks[OFFWAKE_USER]},
      {"kernel_stack_walk_failed", c.stack_walk_failed[OFFWAKE_KERNEL]},
      {"user_stack_walk_failed", c.stack_walk_failed[OFFWAKE_USER]},
      {"kernel_stack_store_full", c.stack_map_full[OFFWAKE_KERNEL]},
      {"user_stack_store_full", c.stack_map_full[OFFWAKE_USER]},
      {"stack_store_emptied", stack_store_emptied},
      {"stack_store_stacks_emptied", stacks_emptied},
      {"kernel_stack_other_error", c.stack_other_error[OFFWAKE_KERNEL]},
      {"user_stack_other_error", c.stack_other_error[OFFWAKE_USER]},
      {"user_stack_no_user_context", c.no_user_context},
      {"user_stack_exec", c.user_stack_exec},
      {"kernel_stack_not_traced", c.kernel_stack_not_traced},
      {"woken_before_min_block", c.woken_early},
      {"user_stack_no_task_work", c.user_work_failed},
      {"user_stacks_by_task_work", c.user_work_scheduled},
      {"user_stacks_parked_for_return", c.user_parked},
      {"user_task_work_runs", c.user_work_runs},
      {"user_task_work_ns", c.user_work_ns},
      {"kernel_stacks_replayed", c.kernel_stacks_replayed},
      {"kernel_replays_checked", c.kernel_replays_checked},
      {"kernel_replays_wrong", c.kernel_replays_wrong},
      {"sample_stacks", sample_stacks},
      {"tracking_records_skipped", tracking_undecodable},
      {"on_cpu_samples", on_cpu_samples},
      {"perf_records_lost", perf_lost},
      {"cgroups_described", cgroups_described},
      {"cgroups_unnamed", cgroups_unnamed},
      {"backend_tracepoint", tracepoint},
      {"tracepoint_events_lost", tracepoint_lost},
      {"tracepoint_events_late", tracepoint_late},
      {"tracepoint_events_undecodable", tracepoint_undecodable},
      {"callchains_cut", callchains_cut},
      {"dwarf_user_stacks", user_unwind.stacks},
      {"dwarf_user_stacks_complete", user_unwind.complete},
      {"dwarf_user_stacks_copy_too_small", user_unwind.copy_too_small},
      {"dwarf_user_stacks_max_stack", user_unwind.max_stack},
      {"dwarf_user_stacks_stopped", user_unwind.stopped},
      {"dwarf_user_stacks_no_registers", user_unwind.no_registers},
      {"dwarf_user_stacks_empty_copy", user_unwind.empty_copy},
      {"dwarf_user_stacks_no_mapping", user_unwind.no_mapping},
      {"dwarf_files_unusable", user_unwind.files_unusable},
      {"dwarf_user_frames", user_unwind.frames},
      {"dwarf_unwind_ns", user_unwind.ns},
      {"user_walks_complete", c.user_walk_end[OFFWAKE_WALK_COMPLETE]},
      {"user_walks_max_stack", c.user_walk_end[OFFWAKE_WALK_DEPTH]},
      {"user_walks_bad_frame", c.user_walk_end[OFFWAKE_WALK_BAD_FRAME]},
      {"user_walks_unreadable", c.user_walk_end[OFFWAKE_WALK_UNREADABLE]},
      {"user_walks_no_unwind_row", c.user_walk_end[OFFWAKE_WALK_NO_ROW]},
      {"user_walks_dwarf_expression", c.user_walk_end[OFFWAKE_WALK_EXPRESSION]},
      {"user_walks_unsupported_rule", c.user_walk_end[OFFWAKE_WALK_UNSUPPORTED]},
      {"user_walks_no_unwind_table_yet", c.user_walk_no_tables},
      {"user_walks_awaited_unwind_tables", c.user_walks_awaited_tables},
      {"user_frames_by_table", c.user_table_frames},
      {"user_frames_by_frame_pointer", c.user_fp_frames},
      {"user_frames_rule_cached", c.user_unwind_cache_hits},
      {"user_frames_rule_searched", c.user_unwind_searches},
      {"user_walks_replayed", c.user_walks_replayed},
      {"unwind_tables", unwind.tables},
      {"unwind_table_bytes", unwind.bytes},
      {"unwind_memory_bytes", unwind.capacity_bytes},
      {"unwind_setup_ns", unwind.setup_ns},
      {"unwind_build_ns", unwind.build_ns},
      {"unwind_binaries_without_rows", unwind.no_rows},
      {"unwind_binaries_unreadable", unwind.unreadable},
      {"unwind_binaries_too_large", unwind.too_large},
      {"unwind_processes", unwind.processes},
      {"unwind_mappings", unwind.mappings},
      {"unwind_mappings_without_table", unwind.mappings_without_table},
      {"unwind_mappings_over_limit", unwind.mappings_over_limit},
      {"unwind_process_map_full", unwind.publish_failures},
      {"unwind_processes_on_request", unwind.processes_on_request},
      {"unwind_request_ns", unwind.request_ns},
      {"unwind_tables_built_beside", unwind.built_beside},
      {"unwind_processes_awaiting_table", unwind.processes_awaiting_table},
      {"unwind_longest_table_wait_ns", unwind.longest_table_wait_ns},
      {"unwind_requests_full", c.unwind_requests_full},
  };
  const BuildIdCacheCounts& b = buildid_cache;
  f.insert(f.end(), {{"buildid_cache_off", !b.enabled},
                     {"buildid_cache_max_bytes", b.max_bytes},
                     {"buildid_cache_added_bytes", b.added_bytes},
                     {"buildid_cache_not_cached", b.not_cached()}});
  static const std::pair<CacheOutcome, const char*> outcomes[] = {
      {CacheOutcome::kAdded, "added"},
      {CacheOutcome::kAlready, "already"},
      {CacheOutcome::kGone, "process_gone"},
      {CacheOutcome::kPermission, "permission"},
      {CacheOutcome::kNotElf, "not_elf"},
      {CacheOutcome::kNoBuildId, "no_build_id"},
      {CacheOutcome::kChanged, "changed"},
      {CacheOutcome::kOverCap, "over_cap"},
      {CacheOutcome::kWriteFailed, "write_failed"},
      {CacheOutcome::kBadName, "unsafe_name"},
  };
  for (const auto& [o, name] : outcomes) f.emplace_back(std::string("buildid_cache_") + name, b.count(o));
  const std::pair<const char*, const StackLosses*> halves[] = {{"kernel", &kernel_missing}, {"user", &user_missing}};
  const BpfTime none;  // not measured: zeros, no program
  const BpfTime& t = bpf_time.measured ? bpf_time : none;
  f.insert(f.end(), {{"bpf_time_measured", t.measured}, {"bpf_prog_runs", t.runs()}, {"bpf_prog_run_ns", t.ns()}});
  for (const ProgramTime& p : t.programs) {
    f.emplace_back("bpf_prog_runs." + p.program, p.runs);
    f.emplace_back("bpf_prog_run_ns." + p.program, p.ns);
  }
  for (const auto& [half, l] : halves) {
    const std::string p = std::string("missing_") + half + "_stacks";
    f.insert(f.end(), {{p, l->total()},
                       {p + "_collision", l->collisions},
                       {p + "_walk_failed", l->walk_failed},
                       {p + "_store_full", l->map_full},
                       {p + "_other_error", l->other_errors},
                       {p + "_unreadable", l->lookup_failed},
                       {p + "_emptied", l->emptied},
                       {p + "_no_user_context", l->no_user_context},
                       {p + "_switch_in_not_traced", l->not_traced},
                       {p + "_no_task_work", l->no_task_work},
                       {p + "_exec", l->exec},
                       {p + "_not_yet_walked", l->in_progress}});
  }
  return f;
}

perfdata::Bytes RecordStats::encode() const {
  auto f = fields();
  perfdata::ByteWriter w;
  w.put<uint32_t>(static_cast<uint32_t>(f.size()));
  for (const auto& [k, v] : f) w.put_header_string(k + "=" + std::to_string(v));
  return w.take();
}

Result<std::vector<std::pair<std::string, uint64_t>>> decode_record_stats(std::span<const uint8_t> section) {
  perfdata::ByteReader r(section, "offwake counters");
  auto n = r.get<uint32_t>();
  if (!n) return n.error();
  if (*n > r.remaining() / 4) return Error::bad_input("offwake counters: count overruns the section");
  std::vector<std::pair<std::string, uint64_t>> out;
  for (uint32_t i = 0; i < *n; ++i) {
    auto line = r.get_header_string();
    if (!line) return line.error();
    const size_t eq = line->find('=');
    if (eq == std::string::npos || eq + 1 >= line->size())
      return Error::bad_input("offwake counters: not key=value: " + quote_text(*line));
    uint64_t v = 0;
    for (size_t k = eq + 1; k < line->size(); ++k) {
      if ((*line)[k] < '0' || (*line)[k] > '9')
        return Error::bad_input("offwake counters: not a number: " + quote_text(*line));
      v = v * 10 + static_cast<uint64_t>((*line)[k] - '0');
    }
    out.emplace_back(line->substr(0, eq), v);
  }
  return out;
}

namespace {

unsigned long long u(uint64_t v) { return static_cast<unsigned long long>(v); }

}  // namespace

void print_unwind_failures(FILE* out, const RecordStats& s) {
  for (const std::string& why : s.unwind.failed) fprintf(out, "perf offwake record: no unwind table: %s\n", why.c_str());
}

void print_build_id_cache_failures(FILE* out, const RecordStats& s) {
  for (const std::string& why : s.buildid_cache.failed)
    fprintf(out, "perf offwake record: not in the build-id cache: %s\n", why.c_str());
}

namespace {

void print_build_id_cache_summary(FILE* out, const BuildIdCacheCounts& b) {
  if (!b.enabled) return;
  using O = CacheOutcome;
  fprintf(out,
          "[ perf offwake record: build-id cache %s: %llu binaries added (%.1f MB), %llu already there; %llu not "
          "cached: %llu process gone, %llu permission denied, %llu not ELF, %llu without build id, %llu changed "
          "since mapped, %llu over the %.0f MB cap, %llu not writable, %llu unsafe names ]\n",
          b.dir.c_str(), u(b.count(O::kAdded)), b.added_bytes / 1048576.0, u(b.count(O::kAlready)), u(b.not_cached()),
          u(b.count(O::kGone)), u(b.count(O::kPermission)), u(b.count(O::kNotElf)), u(b.count(O::kNoBuildId)),
          u(b.count(O::kChanged)), u(b.count(O::kOverCap)), b.max_bytes / 1048576.0, u(b.count(O::kWriteFailed)),
          u(b.count(O::kBadName)));
}

}  // namespace

void print_record_summary(FILE* out, const RecordStats& s) {
  const offwake_counters& c = s.counters;
  if (s.timeline_events) {
    fprintf(out, "[ perf offwake record: %llu blocks, %llu wakeups, %.3f s blocked, %llu timeline events ]\n",
            u(c.blocks), u(c.wakeups), s.blocked_ns / 1e9, u(s.timeline_events));
  } else {
    fprintf(out, "[ perf offwake record: %llu blocks, %llu wakeups, %.3f s blocked, %llu distinct stacks ]\n",
            u(c.blocks), u(c.wakeups), s.blocked_ns / 1e9, u(s.keys));
  }
  fprintf(out, "[ perf offwake record: Captured and wrote %.3f MB %s (%llu samples", s.bytes / 1048576.0,
          s.output.c_str(), u(s.offwake_samples + s.on_cpu_samples));
  if (s.on_cpu_samples || s.perf_lost)
    fprintf(out, ", of which %llu on-CPU; %llu perf records lost", u(s.on_cpu_samples), u(s.perf_lost));
  fprintf(out, ") ]\n");
  if (s.cgroups_unnamed)
    fprintf(out, "[ perf offwake record: %llu cgroups of samples not named (gone before they were seen) ]\n",
            u(s.cgroups_unnamed));
  fprintf(out,
          "[ perf offwake record: lost %llu blocks (aggregation map full %llu, no task storage %llu, "
          "ring buffer full %llu, switches skipped %llu); lost %llu wakeups (no task storage %llu, "
          "skipped %llu)",
          u(s.lost_blocks()), u(c.agg_map_full), u(c.storage_failed_blocks), u(c.ringbuf_drops),
          u(s.skipped_switches), u(s.lost_wakeups()), u(c.storage_failed_wakeups), u(s.skipped_wakeups));
  if (c.forks_not_followed) fprintf(out, "; %llu child processes not followed (target set full)", u(c.forks_not_followed));
  fprintf(out, " ]\n");
  const StackLosses m = s.missing_stacks();
  fprintf(out,
          "[ perf offwake record: %llu of %llu sample stacks missing (failed: collisions %llu, walks %llu, "
          "store full %llu, other %llu, unreadable %llu, emptied %llu; not taken: no user context %llu, "
          "switch-in not traced %llu, no task work %llu, exec %llu, not yet walked %llu); "
          "%llu stack captures (%llu kernel stacks the thread's last from the same place, checked, not "
          "unwound again), %llu collisions ]\n",
          u(m.total()), u(s.sample_stacks), u(m.collisions), u(m.walk_failed), u(m.map_full), u(m.other_errors),
          u(m.lookup_failed), u(m.emptied), u(m.no_user_context), u(m.not_traced), u(m.no_task_work), u(m.exec),
          u(m.in_progress),
          u(c.stack_captures[0] + c.stack_captures[1]), u(c.kernel_stacks_replayed),
          u(c.stack_collision[0] + c.stack_collision[1]));
  fprintf(out,
          "[ perf offwake record: %llu blocks without a waker (%llu no wakeup seen); %llu woken before "
          "--min-block or their sampling threshold (waker named, its stacks not taken); "
          "%llu ended late (switch-in not traced); %llu switches untraced by the kernel; %llu still blocked "
          "at the stop (counted up to it) ]\n",
          u(c.missed_wakeups), u(c.missed_wakeups), u(c.woken_early), u(c.late_ends),
          u(c.untraced_switches), u(c.still_blocked));
  if (s.stack_store_emptied)
    fprintf(out,
            "[ perf offwake record: stack store emptied at %llu window switches, of %llu stacks no sample of "
            "their window used (--stack-storage-size; those of blocks still open are kept two switches) ]\n",
            u(s.stack_store_emptied), u(s.stacks_emptied));
  if (c.kernel_replays_checked)
    fprintf(out,
            "[ perf offwake record: --check-replays: %llu replayed kernel stacks unwound as well, %llu of them "
            "different ]\n",
            u(c.kernel_replays_checked), u(c.kernel_replays_wrong));
  print_sampling_summary(out, "record", s);
  print_bpf_time_summary(out, s);
  print_user_unwind_summary(out, "record", s.user_unwind);
  uint64_t walks = 0;
  for (uint64_t n : c.user_walk_end) walks += n;
  if (walks) {
    const auto* e = c.user_walk_end;
    fprintf(out,
            "[ perf offwake record: %llu user stacks walked: %llu to the outermost frame, %llu at --max-stack; "
            "ended early: %llu bad frame, %llu unreadable, %llu no unwind row, %llu DWARF expression, %llu "
            "unsupported rule",
            u(walks), u(e[OFFWAKE_WALK_COMPLETE]), u(e[OFFWAKE_WALK_DEPTH]), u(e[OFFWAKE_WALK_BAD_FRAME]),
            u(e[OFFWAKE_WALK_UNREADABLE]), u(e[OFFWAKE_WALK_NO_ROW]), u(e[OFFWAKE_WALK_EXPRESSION]),
            u(e[OFFWAKE_WALK_UNSUPPORTED]));
    if (c.user_walks_replayed)
      fprintf(out, "; %llu of them the thread's last walk from the same place, replayed", u(c.user_walks_replayed));
    if (c.user_parked)
      fprintf(out, "; %llu on the way back to user space (rseq_update, sys_exit)", u(c.user_parked));
    if (c.user_work_runs)
      fprintf(out, "; %llu in task work on the way back to user space (%.1f ms of BPF time, not in kernel.bpf_stats)",
              u(c.user_work_runs), c.user_work_ns / 1e6);
    if (s.unwind.used) {
      fprintf(out, "; %llu before their process had unwind tables", u(c.user_walk_no_tables));
      if (c.user_walks_awaited_tables)
        fprintf(out, " (%llu more waited for them, walked on the way back to user space)",
                u(c.user_walks_awaited_tables));
      fprintf(out, "; frames: %llu by table, %llu by frame pointer (their rules: %llu cached, %llu searched)",
              u(c.user_table_frames), u(c.user_fp_frames), u(c.user_unwind_cache_hits), u(c.user_unwind_searches));
    }
    fprintf(out, " ]\n");
  }
  if (s.unwind.used) {
    const auto& w = s.unwind;
    fprintf(out,
            "[ perf offwake record: unwind tables: %llu binaries, %.1f of %.0f MB (--unwind-memory), %.0f ms at the "
            "start; walked by frame pointers: %llu too large, %llu without .eh_frame rows, %llu unreadable",
            u(w.tables), w.bytes / 1048576.0, w.capacity_bytes / 1048576.0, w.setup_ns / 1e6, u(w.too_large),
            u(w.no_rows), u(w.unreadable));
    if (w.mappings_over_limit || w.publish_failures)
      fprintf(out, "; %llu mappings over the per-process limit, %llu processes not stored (map full)",
              u(w.mappings_over_limit), u(w.publish_failures));
    if (w.built_beside)
      fprintf(out, "; %llu built beside the recording, while %llu processes waited (the longest %.0f ms)",
              u(w.built_beside), u(w.processes_awaiting_table), w.longest_table_wait_ns / 1e6);
    if (w.processes_on_request || s.counters.unwind_requests_full)
      fprintf(out, "; %llu processes outside the targets given tables as they woke one (%.0f ms), %llu could not ask",
              u(w.processes_on_request), w.request_ns / 1e6, u(s.counters.unwind_requests_full));
    fprintf(out, " ]\n");
  }
  print_build_id_cache_summary(out, s.buildid_cache);
  if (s.tracepoint)
    fprintf(out,
            "[ perf offwake record: tracepoint back end: %llu scheduler events lost (ring buffer full), %llu out "
            "of time order, %llu undecodable, %llu callchains cut at a word that is no context marker ]\n",
            u(s.tracepoint_lost), u(s.tracepoint_late), u(s.tracepoint_undecodable), u(s.callchains_cut));
}

void print_bpf_time_summary(FILE* out, const RecordStats& s) {
  const RecordStats::BpfTime& t = s.bpf_time;
  if (!t.measured || !t.runs()) return;
  const uint64_t ns = t.ns() + s.counters.user_work_ns;
  fprintf(out, "[ perf offwake record: BPF programs: %.3f s of CPU, %.2f%% of one CPU over %.3f s", ns / 1e9,
          s.duration_ns ? 100.0 * ns / s.duration_ns : 0.0, s.duration_ns / 1e9);
  const char* sep = ": ";
  for (const RecordStats::ProgramTime& p : t.programs) {
    if (!p.runs) continue;
    fprintf(out, "%s%s %llu run%s at %.0f ns", sep, p.program.c_str(), u(p.runs), p.runs == 1 ? "" : "s",
            static_cast<double>(p.ns) / p.runs);
    sep = ", ";
  }
  if (s.counters.user_work_runs)
    fprintf(out, "%stask work %llu runs at %.0f ns (timed by itself)", sep, u(s.counters.user_work_runs),
            static_cast<double>(s.counters.user_work_ns) / s.counters.user_work_runs);
  fprintf(out, " ]\n");
}

void print_sampling_summary(FILE* out, const char* command, const RecordStats& s) {
  if (!s.sample_period_ns) return;
  const offwake_counters& c = s.counters;
  fprintf(out,
          "[ perf offwake %s: sampled, --sample-period %g us: %llu blocks kept, %llu of them shorter than the "
          "period and weighted at it; %llu not drawn; blocked times are estimates ]\n",
          command, s.sample_period_ns / 1e3, u(c.blocks), u(c.sample_weighted), u(c.sample_dropped));
}

void print_user_unwind_summary(FILE* out, const char* command, const UserUnwindCounts& n) {
  if (!n.stacks) return;
  fprintf(out,
          "[ perf offwake %s: %llu user stacks unwound from stack copies, %llu complete; ended early: copy "
          "too small %llu, --max-stack %llu, other %llu; not unwound: no user registers %llu, the pc alone "
          "(empty copy %llu, no usable mapping %llu); %llu files unusable; %.3f ms, %.1f us a stack ]\n",
          command, u(n.stacks), u(n.complete), u(n.copy_too_small), u(n.max_stack), u(n.stopped),
          u(n.no_registers), u(n.empty_copy), u(n.no_mapping), u(n.files_unusable), n.ns / 1e6,
          n.ns / 1e3 / static_cast<double>(n.stacks));
}

}  // namespace offwake
