#include "record/tracepoint_blocks.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "callchain/tracing_frames.h"
#include "tracking/perf_event_set.h"
#include "unwind/dwarf_unwinder.h"

namespace offwake {

std::function<bool(uint64_t)> leading_frames_to_drop(std::shared_ptr<const Kallsyms> kallsyms, bool sched_frames) {
  std::optional<std::pair<uint64_t, uint64_t>> sched_text;
  if (!sched_frames) {
    auto start = kallsyms->address_of("__sched_text_start"), end = kallsyms->address_of("__sched_text_end");
    if (start && end && *start < *end) sched_text.emplace(*start, *end);
  }
  return [kallsyms, sched_text](uint64_t ip) {
    if (sched_text && ip >= sched_text->first && ip < sched_text->second) return true;
    const KernelSymbol* sym = kallsyms->find(ip);
    return sym && is_tracing_frame(sym->name);
  };
}

void use_kernel_symbols(sched::PairerOptions& pairer, std::shared_ptr<const Kallsyms> kallsyms, bool sched_frames) {
  pairer.drop_leading_kernel = leading_frames_to_drop(kallsyms, sched_frames);
  pairer.is_interrupt_entry = [kallsyms](uint64_t ip) {
    const KernelSymbol* sym = kallsyms->find(ip);
    return sym && is_interrupt_entry_stub(sym->name);
  };
}

bool proc_is_kernel_thread(uint32_t tid) {
  if (tid == 0) return true;  // the idle task
  const std::string path = "/proc/" + std::to_string(tid) + "/stat";
  FILE* f = fopen(path.c_str(), "re");
  if (!f) return false;
  char buf[1024];
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  // "tid (comm) state ppid pgrp session tty_nr tpgid flags ...": comm may hold anything,
  // so the fields start after its last ')'.
  const char* p = strrchr(buf, ')');
  if (!p) return false;
  unsigned long flags = 0;
  if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1) return false;
  constexpr unsigned long kPfKthread = 0x00200000;  // include/linux/sched.h
  return flags & kPfKthread;
}

namespace {

class TracepointBlocks : public BlockSource {
 public:
  TracepointBlocks(sched::SchedTracepoints tp, sched::PairerOptions o, uint32_t stack_depth, bool unwind)
      : tp_(std::move(tp)),
        targets_(o.tgids.begin(), o.tgids.end()),
        follow_forks_(o.follow_forks),
        stack_depth_(stack_depth) {
    if (unwind) {
      // --call-graph dwarf: processes that existed before the recording are read from /proc.
      unwinder_.emplace(unwind::DwarfUnwinderOptions{stack_depth, true});
      o.complete_stack = [this](const sched::SchedEvent& e, Callchain& chain) {
        unwinder_->unwind(e.pid, e.tid, e.user_stack, chain);
      };
    }
    if (!o.is_kernel_thread)
      o.is_kernel_thread = [this](uint32_t tid) {
        auto [it, fresh] = kthreads_.try_emplace(tid, false);
        if (fresh) it->second = proc_is_kernel_thread(tid);
        return it->second;
      };
    if (o.timeline) o.timeline = [this](const offwake_event& e) { ended_.push_back(e); };
    o.every_switch = true;  // system-wide, on every CPU
    pairer_.emplace(std::move(o));
  }

  const char* name() const override { return "tracepoint"; }
  uint32_t stack_depth() const override { return stack_depth_; }

  Status start() override {
    tp_.enable();
    return ok_status();
  }

  // A pass over the ring buffers; waits for data first, so that the recording loop sleeps
  // here rather than spinning.
  bool paced() const override { return true; }
  Status read() override {
    tp_.poll(50);
    return tp_.read();
  }

  void tracking(const perfdata::Record& r) override {
    using sched::TaskChange;
    if (const auto* t = std::get_if<perfdata::TaskRecord>(&r)) {
      if (t->exit) {
        tp_.add_task_change(t->time, {TaskChange::Kind::kExit, 0, t->pid, t->tid, t->sample_id.cpu});
      } else if (t->pid != t->ppid) {  // a new process, not a new thread
        if (follow_forks_ && targets_.count(t->ppid)) targets_.insert(t->pid);
        tp_.add_task_change(t->time, {TaskChange::Kind::kFork, t->ppid, t->pid, t->tid});
      }
    } else if (const auto* c = std::get_if<perfdata::CommRecord>(&r); c && c->exec) {
      tp_.add_task_change(c->sample_id.time, {TaskChange::Kind::kExec, 0, c->pid, c->tid});
    } else if (const auto* m = std::get_if<perfdata::Mmap2Record>(&r); m && unwinder_) {
      tp_.add_mapping(m->sample_id.time, *m);
    }
  }

  Status step(const EventFn& timeline) override {
    tp_.release([this](uint64_t time, sched::OrderedEvent&& e) { feed(time, std::move(e)); });
    return hand_over(timeline);
  }

  uint64_t detach() override {
    tp_.disable();
    return monotonic_ns();
  }
  Status end_open_blocks(uint64_t stop_ns) override {
    stop_ns_ = stop_ns;
    return tp_.read();  // what the ring buffers still hold; the pairer ends the rest at finish()
  }

  Status finish(const EventFn& timeline) override {
    tp_.release([this](uint64_t time, sched::OrderedEvent&& e) { feed(time, std::move(e)); }, true);
    pairer_->finish(stop_ns_);
    return hand_over(timeline);
  }

  Status switch_window(const AggregateBatchFn& fn, RecordStats& at_switch) override {
    OFFWAKE_TRY(fill_stats(at_switch));
    const std::vector<Aggregate> window = pairer_->take_aggregates();
    return window.empty() ? ok_status() : fn(window);
  }
  Status visit_aggregates(const AggregateBatchFn& fn) const override { return fn(pairer_->aggregates()); }
  const StackTraceSource& stacks() const override { return *pairer_; }

  Status fill_stats(RecordStats& s) const override {
    // The blocks that records lost from a ring buffer may have cut are the pairer's
    // ring-buffer drops (BlockPairer::loss_begins); the records themselves are counted apart,
    // switches and wakeups alike.
    s.counters = pairer_->counters();
    s.tracepoint = true;
    s.tracepoint_lost = tp_.lost();
    s.tracepoint_late = tp_.late() + late_;
    s.tracepoint_undecodable = tp_.undecodable();
    s.callchains_cut = tp_.callchains_cut();
    if (unwinder_) s.user_unwind = unwinder_->counts();
    return ok_status();
  }

  bool is_target(uint32_t pid) override { return targets_.empty() || targets_.count(pid); }

 private:
  void feed(uint64_t time, sched::OrderedEvent&& ev) {
    // Past the stop nothing is recorded, as with the BPF back end: a block still open then is
    // ended at the stop by finish() ("[still blocked]"), not by what came after it (the
    // command killed at the stop, its wakeup, its exit).
    if (stop_ns_ && time > stop_ns_) return;
    if (auto* e = std::get_if<sched::SchedEvent>(&ev)) {
      // An event that came after a younger one was released (see PassOrder): the pairer
      // takes time order only, so it is moved up to the time already reached, and counted.
      if (e->time < now_) {
        e->time = now_;
        ++late_;
      }
      now_ = e->time;
      pairer_->add(*e);
      return;
    }
    if (const auto* m = std::get_if<perfdata::Mmap2Record>(&ev)) {
      unwinder_->mmap(*m);
      return;
    }
    if (const auto* l = std::get_if<sched::RecordsLost>(&ev)) {
      if (l->begins) pairer_->loss_begins(std::max(time, now_));
      else pairer_->loss_ends();
      return;
    }
    const auto& c = std::get<sched::TaskChange>(ev);
    switch (c.kind) {
      case sched::TaskChange::Kind::kFork:
        pairer_->fork(c.parent_tgid, c.tgid);
        if (unwinder_) unwinder_->fork(c.parent_tgid, c.tgid);
        break;
      case sched::TaskChange::Kind::kExec:
        pairer_->exec(c.tid);
        if (unwinder_) unwinder_->exec(c.tgid);
        break;
      case sched::TaskChange::Kind::kExit:
        pairer_->exit(c.tid, std::max(time, now_), c.cpu);
        if (unwinder_) unwinder_->exit(c.tgid, c.tid);
        kthreads_.erase(c.tid);  // the tid may come back as another thread
        break;
    }
  }

  Status hand_over(const EventFn& timeline) {
    std::vector<offwake_event> ended;
    ended.swap(ended_);
    for (const auto& e : ended) OFFWAKE_TRY(timeline(e));
    return ok_status();
  }

  sched::SchedTracepoints tp_;
  std::optional<sched::BlockPairer> pairer_;
  std::unordered_set<uint32_t> targets_;
  bool follow_forks_;
  uint32_t stack_depth_;
  std::unordered_map<uint32_t, bool> kthreads_;
  std::optional<unwind::DwarfUnwinder> unwinder_;  // --call-graph dwarf
  std::vector<offwake_event> ended_;
  uint64_t now_ = 0, stop_ns_ = 0, late_ = 0;
};

}  // namespace

Result<std::unique_ptr<BlockSource>> open_tracepoint_blocks(TracepointBlockOptions o) {
  auto decoder = sched::SchedDecoder::from_tracefs(o.tracefs);
  if (!decoder)
    return decoder.error().context("reading the scheduler tracepoints' formats");
  auto kallsyms = Kallsyms::load();
  if (!kallsyms) return kallsyms.error().context("reading the kernel's symbols");
  use_kernel_symbols(o.pairer, std::make_shared<const Kallsyms>(std::move(kallsyms).value()), o.sched_frames);
  auto tp = sched::SchedTracepoints::open(std::move(decoder).value(), o.tracepoints);
  if (!tp) return tp.error();
  return std::unique_ptr<BlockSource>(new TracepointBlocks(std::move(tp).value(), std::move(o.pairer),
                                                          o.tracepoints.max_stack, o.tracepoints.user_stack_copy != 0));
}

}  // namespace offwake
