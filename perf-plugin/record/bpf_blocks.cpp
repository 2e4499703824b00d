#include "record/bpf_blocks.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <optional>
#include <vector>
#include <unordered_set>

#include "record/user_unwind.h"
#include "tracking/perf_event_set.h"

namespace offwake {
namespace {

class BpfBlocks : public BlockSource {
 public:
  BpfBlocks(bpf::OffwakeBpf bpf, bpf::StackTraceMap stacks, bool filter_tgids)
      : bpf_(std::move(bpf)), stacks_(std::move(stacks)), filter_tgids_(filter_tgids) {}

  // --user-walker=auto: the tables of the processes in `seed` are built at start().
  Status use_unwind_tables(UnwindSeed seed) {
    auto maps = bpf::UnwindMaps::open(bpf_);
    if (!maps) return maps.error();
    unwind_.emplace(std::move(maps).value(), [this](uint32_t pid) { return is_target(pid); });
    seed_ = std::move(seed);
    return ok_status();
  }

  const char* name() const override { return "bpf"; }
  uint32_t stack_depth() const override { return bpf_.stack_depth(); }
  Status start() override {
    if (unwind_) {
      unwind_->seed(seed_.pids, seed_.all);
      if (!seed_.command.empty()) unwind_->prepare_command(seed_.command);
    }
    return bpf_.attach();
  }
  void tracking(const perfdata::Record& r) override {
    if (unwind_) unwind_->tracking(r);
  }
  void settle_tracking() override {
    if (unwind_) unwind_->publish_built(true);
  }

  Status step(const EventFn& timeline) override {
    if (unwind_) {
      unwind_->serve_requests();
      unwind_->publish_built();
    }
    if (!bpf_.timeline()) return ok_status();
    auto n = bpf_.poll_events(0, counting(timeline));
    return n ? ok_status() : Status(n.error());
  }

  uint64_t detach() override { return bpf_.detach(); }
  Status end_open_blocks(uint64_t stop_ns) override { return bpf_.end_open_blocks(stop_ns); }

  // Programs still running on other CPUs may submit late: read until the kernel's count of
  // sent blocks is reached, or a second has passed.
  Status finish(const EventFn& timeline) override {
    if (!bpf_.timeline()) return ok_status();
    const uint64_t deadline = monotonic_ns() + 1'000'000'000ull;
    for (;;) {
      auto n = bpf_.consume_events(counting(timeline));
      if (!n) return n.error();
      auto counters = bpf_.read_counters();
      if (!counters) return counters.error();
      if (events_ >= counters->blocks || monotonic_ns() > deadline) return ok_status();
      usleep(10'000);
    }
  }

  // Aggregated: the programs add to the other map from now on; once none adds to the old one
  // (a block counted there is in it), it is read and emptied.
  Status switch_window(const AggregateBatchFn& fn, RecordStats& at_switch) override {
    if (bpf_.timeline()) {
      OFFWAKE_TRY(fill_stats(at_switch));
    } else {
      auto old = bpf_.switch_window();
      if (!old) return old.error();
      OFFWAKE_TRY(fill_stats(at_switch));
      OFFWAKE_TRY(bpf::drain_aggregates(*old, fn));
    }
    // The window's stacks are written: the store may be emptied of the others, in its count.
    OFFWAKE_TRY(stacks_.end_window());
    fill_store_counts(at_switch);
    return ok_status();
  }

  Status visit_aggregates(const AggregateBatchFn& fn) const override { return bpf_.visit_aggregates(fn); }
  const StackTraceSource& stacks() const override { return stacks_; }

  Status fill_stats(RecordStats& s) const override {
    auto counters = bpf_.read_counters();
    if (!counters) return counters.error();
    auto programs = bpf_.programs();  // one read of the programs' info for misses and time
    if (!programs) return programs.error();
    s.counters = *counters;
    s.skipped_switches = programs->misses.switches;
    s.skipped_wakeups = programs->misses.wakeups;
    s.skipped_other = programs->misses.other;
    if (unwind_) s.unwind = unwind_->stats();
    fill_store_counts(s);
    s.bpf_time.measured = programs->measured;
    s.bpf_time.programs.clear();
    for (const bpf::ProgramRuns& p : programs->programs) s.bpf_time.programs.push_back({p.name, p.runs, p.ns});
    return ok_status();
  }

  // The process set lives in the BPF map, which grows as a followed command forks.
  bool is_target(uint32_t pid) override {
    if (!filter_tgids_ || targets_.count(pid)) return true;
    uint8_t present = 0;
    if (bpf_map_lookup_elem(bpf_.target_tgids_fd(), &pid, &present) != 0) return false;
    targets_.insert(pid);
    return true;
  }

 private:
  void fill_store_counts(RecordStats& s) const {
    s.stack_store_emptied = stacks_.store_emptied();
    s.stacks_emptied = stacks_.stacks_emptied();
  }

  bpf::EventCallback counting(const EventFn& fn) {
    return [this, &fn](const offwake_event& e) -> Status {
      ++events_;
      return fn(e);
    };
  }

  bpf::OffwakeBpf bpf_;
  bpf::StackTraceMap stacks_;
  bool filter_tgids_;
  std::unordered_set<uint32_t> targets_;
  uint64_t events_ = 0;
  std::optional<UserUnwind> unwind_;  // after bpf_: unmaps its memory first
  UnwindSeed seed_;
};

}  // namespace

Result<std::unique_ptr<BlockSource>> load_bpf_blocks(const bpf::LoaderOptions& options, UnwindSeed seed) {
  auto bpf = bpf::OffwakeBpf::load(options);
  if (!bpf) return bpf.error();
  auto stacks = bpf->stack_trace_map();
  if (!stacks) return stacks.error();
  auto blocks = std::make_unique<BpfBlocks>(std::move(bpf).value(), std::move(stacks).value(), !options.tgids.empty());
  if (options.unwind_tables) OFFWAKE_TRY(blocks->use_unwind_tables(std::move(seed)));
  return std::unique_ptr<BlockSource>(std::move(blocks));
}

}  // namespace offwake
