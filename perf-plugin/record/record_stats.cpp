#include "record/record_stats.h"

namespace offwake {

uint64_t RecordStats::lost_blocks() const {
  return counters.agg_map_full + counters.storage_failed + counters.unended_blocks + counters.ringbuf_drops +
         recursion_misses;
}

std::vector<std::pair<std::string, uint64_t>> RecordStats::fields() const {
  const offwake_counters& c = counters;
  return {
      {"duration_ns", duration_ns},
      {"aggregates", keys},
      {"blocked_ns", blocked_ns},
      {"blocks", c.blocks},
      {"wakeups", c.wakeups},
      {"irq_wakeups", c.irq_wakeups},
      {"missed_wakeups", c.missed_wakeups},
      {"late_block_ends", c.late_ends},
      {"still_blocked_at_stop", c.still_blocked},
      {"lost_ringbuf_drops", c.ringbuf_drops},
      {"lost_ringbuf_drops_ns", c.ringbuf_drops_ns},
      {"timeline_events", timeline_events},
      {"lost_unended_blocks", c.unended_blocks},
      {"filtered_blocks", c.filtered},
      {"lost_blocks_map_full", c.agg_map_full},
      {"lost_blocks_map_full_ns", c.agg_map_full_ns},
      {"lost_storage_failed", c.storage_failed},
      {"lost_recursion_misses", recursion_misses},
      {"kernel_stack_collisions", c.stack_collision[OFFWAKE_KERNEL]},
      {"user_stack_collisions", c.stack_collision[OFFWAKE_USER]},
      {"kernel_stack_walk_failed", c.stack_walk_failed[OFFWAKE_KERNEL]},
      {"user_stack_walk_failed", c.stack_walk_failed[OFFWAKE_USER]},
      {"kernel_stack_map_full", c.stack_map_full[OFFWAKE_KERNEL]},
      {"user_stack_map_full", c.stack_map_full[OFFWAKE_USER]},
      {"kernel_stack_other_error", c.stack_other_error[OFFWAKE_KERNEL]},
      {"user_stack_other_error", c.stack_other_error[OFFWAKE_USER]},
      {"kernel_stack_lookup_failed", kernel_lookup_failed},
      {"user_stack_lookup_failed", user_lookup_failed},
      {"tracking_records_skipped", tracking_undecodable},
      {"on_cpu_samples", on_cpu_samples},
      {"perf_records_lost", perf_lost},
  };
}

perfdata::Bytes RecordStats::encode() const {
  auto f = fields();
  perfdata::ByteWriter w;
  w.put<uint32_t>(static_cast<uint32_t>(f.size()));
  for (const auto& [k, v] : f) w.put_header_string(k + "=" + std::to_string(v));
  return w.take();
}

void print_record_summary(FILE* out, const RecordStats& s) {
  const offwake_counters& c = s.counters;
  if (s.timeline_events) {
    fprintf(out, "[ perf offwake record: %llu blocks, %llu wakeups, %.3f s blocked, %llu timeline events ]\n",
            (unsigned long long)c.blocks, (unsigned long long)c.wakeups, s.blocked_ns / 1e9,
            (unsigned long long)s.timeline_events);
  } else {
    fprintf(out, "[ perf offwake record: %llu blocks, %llu wakeups, %.3f s blocked, %llu distinct stacks ]\n",
            (unsigned long long)c.blocks, (unsigned long long)c.wakeups, s.blocked_ns / 1e9,
            (unsigned long long)s.keys);
  }
  fprintf(out, "[ perf offwake record: Captured and wrote %.3f MB %s (%llu samples", s.bytes / 1048576.0,
          s.output.c_str(), (unsigned long long)(2 * (s.keys + s.timeline_events) + s.on_cpu_samples));
  if (s.on_cpu_samples || s.perf_lost) {
    fprintf(out, ", of which %llu on-CPU; %llu perf records lost", (unsigned long long)s.on_cpu_samples,
            (unsigned long long)s.perf_lost);
  }
  fprintf(out, ") ]\n");
  uint64_t stack_losses = 0;
  for (int h : {OFFWAKE_KERNEL, OFFWAKE_USER})
    stack_losses += c.stack_collision[h] + c.stack_walk_failed[h] + c.stack_map_full[h] + c.stack_other_error[h];
  stack_losses += s.kernel_lookup_failed + s.user_lookup_failed;
  fprintf(out,
          "[ perf offwake record: lost %llu blocks (map full %llu, no task storage %llu, unended %llu, "
          "ring buffer full %llu, recursion %llu); "
          "%llu stacks missing (collisions %llu, failed walks %llu, stack map full %llu); "
          "%llu blocks without a waker; %llu ended late (switch-in not traced); "
          "%llu still blocked at the stop (counted up to it) ]\n",
          (unsigned long long)s.lost_blocks(), (unsigned long long)c.agg_map_full,
          (unsigned long long)c.storage_failed, (unsigned long long)c.unended_blocks,
          (unsigned long long)c.ringbuf_drops, (unsigned long long)s.recursion_misses,
          (unsigned long long)stack_losses,
          (unsigned long long)(c.stack_collision[0] + c.stack_collision[1]),
          (unsigned long long)(c.stack_walk_failed[0] + c.stack_walk_failed[1]),
          (unsigned long long)(c.stack_map_full[0] + c.stack_map_full[1]),
          (unsigned long long)c.missed_wakeups, (unsigned long long)c.late_ends,
          (unsigned long long)c.still_blocked);
}

}  // namespace offwake
