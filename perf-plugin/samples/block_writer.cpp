#include "samples/block_writer.h"

#include <algorithm>
#include <utility>

namespace offwake {

BlockWriter::BlockWriter(perfdata::PerfDataWriter& writer, const StackTraceSource& stacks, OffwakeEventIds ids,
                         const Kallsyms* kallsyms, RecordStats& stats, DescribeFn describe, ExitTimeFn exit_time)
    : writer_(writer),
      samples_(stacks, ids, kallsyms, stats.sample_period_ns),
      ids_(ids),
      stats_(stats),
      describe_(std::move(describe)),
      exit_time_(std::move(exit_time)) {}

// A thread that wakes another on its way out (a child its waiting parent, a pipe's writer its
// reader, at close) does it after the kernel wrote its PERF_RECORD_EXIT: at the wakeup's time
// the thread is gone for perf, and perf 6.12 names it ":TID". Such a group is stamped just
// before the exit, when the wakeup came within kExitWakeNs of it (a tid reused later has an
// exit of its own, long before).
void BlockWriter::stamp_before_exits(std::vector<perfdata::SampleRecord>& samples) const {
  constexpr uint64_t kExitWakeNs = 10'000'000;
  if (!exit_time_ || samples.empty()) return;
  uint64_t time = samples.front().time;
  for (size_t i = 1; i < samples.size(); ++i) {
    const std::optional<uint64_t> exit = exit_time_(samples[i].tid);
    if (exit && *exit > 0 && *exit <= samples.front().time && samples.front().time - *exit < kExitWakeNs)
      time = std::min(time, *exit - 1);
  }
  for (auto& s : samples) s.time = time;
}

Status BlockWriter::write_samples(std::vector<perfdata::SampleRecord> samples) {
  stamp_before_exits(samples);
  if (describe_) OFFWAKE_TRY(describe_(samples));
  for (const auto& s : samples) OFFWAKE_TRY(writer_.write(s));
  stats_.offwake_samples += samples.size();
  return ok_status();
}

Status BlockWriter::write(std::span<const Aggregate> batch, uint64_t fallback_time) {
  std::vector<const Aggregate*> order;
  order.reserve(batch.size());
  for (const Aggregate& a : batch) order.push_back(&a);
  std::stable_sort(order.begin(), order.end(), [fallback_time](const Aggregate* x, const Aggregate* y) {
    return aggregate_time(*x, fallback_time) < aggregate_time(*y, fallback_time);
  });
  for (const Aggregate* a : order) {
    OFFWAKE_TRY(write_samples(samples_.convert(*a, fallback_time)));
    stats_.blocked_ns += a->value.total_ns;
    ++stats_.keys;
  }
  return ok_status();
}

Status BlockWriter::write(const offwake_event& e) {
  auto samples = samples_.convert(e);
  OFFWAKE_TRY(write_samples(samples));
  ++stats_.timeline_events;
  stats_.blocked_ns += samples.front().period;
  return ok_status();
}

Status BlockWriter::finish(uint64_t time) {
  stats_.kernel_missing = samples_.kernel_losses();
  stats_.user_missing = samples_.user_losses();
  stats_.sample_stacks = samples_.sample_stacks();
  // Blocks that never became a sample are lost samples of offwake-time, as perf counts them.
  if (uint64_t lost = stats_.lost_blocks()) {
    perfdata::LostSamplesRecord l;
    l.lost = lost;
    l.sample_id.id = ids_.time;
    l.sample_id.time = time;
    OFFWAKE_TRY(writer_.write(l));
  }
  if (writer_.mode() == perfdata::Mode::kFile) writer_.add_feature(kFeatOffwakeStats, stats_.encode());
  return ok_status();
}

Status write_pseudo_waker_comm(perfdata::PerfDataWriter& w, const OffwakeEventIds& ids, const PseudoWaker& p) {
  perfdata::CommRecord c;
  c.pid = c.tid = p.tid;
  c.comm = p.comm;
  c.sample_id = {p.tid, p.tid, 0, ids.waker, 0, 0};
  return w.write(c);
}

Status write_pseudo_waker_comms(perfdata::PerfDataWriter& w, const OffwakeEventIds& ids) {
  for (const PseudoWaker& p : kPseudoWakers) OFFWAKE_TRY(write_pseudo_waker_comm(w, ids, p));
  return ok_status();
}

}  // namespace offwake
