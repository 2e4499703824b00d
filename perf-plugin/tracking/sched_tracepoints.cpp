#include "tracking/sched_tracepoints.h"

#include <algorithm>
#include <ctime>

namespace offwake::sched {

namespace {

// A tracepoint sampled at every hit, with its raw payload and both halves of the callchain.
// Wakes a poll when a quarter of the ring buffer is full, well before it overflows.
perf_event_attr tracepoint_attr(uint64_t id, const SchedTracepointOptions& o) {
  const uint32_t wakeup = static_cast<uint32_t>(o.mmap_pages) * 4096u / 4u;
  perf_event_attr a = base_perf_attr(PERF_TYPE_TRACEPOINT, id, wakeup);
  a.sample_period = 1;
  a.sample_type |= PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_CGROUP;
  a.sample_max_stack = o.max_stack;
  ask_user_stack_copy(a, o.user_stack_copy);
  return a;
}

}  // namespace

Result<SchedTracepoints> SchedTracepoints::open(SchedDecoder decoder, const SchedTracepointOptions& o) {
  if (o.mmap_pages == 0 || (o.mmap_pages & (o.mmap_pages - 1)))
    return Error::usage("ring buffer pages per CPU must be a power of two, not " + std::to_string(o.mmap_pages),
                        EINVAL);
  std::vector<perfdata::EventDesc> events = {
      {tracepoint_attr(decoder.switch_id(), o), "sched:sched_switch", {}},
      {tracepoint_attr(decoder.waking_id(), o), "sched:sched_waking", {}},
  };
  auto set = PerfEventSet::open(std::move(events), o.mmap_pages);
  if (!set) {
    Error e = set.error().context("opening the tracepoints sched:sched_switch and sched:sched_waking");
    if (e.errnum() == EACCES || e.errnum() == EPERM)
      return Error(e.what() + " (needs root, or CAP_PERFMON)", e.errnum(), e.kind());
    return e;
  }
  return SchedTracepoints(std::move(decoder), std::move(set).value());
}

Status SchedTracepoints::read() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  order_.begin_pass(static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec));
  return set_.drain([&](size_t buffer, const perfdata::Record& r) -> Status {
    if (const auto* l = std::get_if<perfdata::LostRecord>(&r)) {
      lost_ += l->lost;
      if (buffer >= last_time_.size()) last_time_.resize(buffer + 1, 0);
      const uint64_t from = last_time_[buffer], to = std::max(l->sample_id.time, from);
      order_.push(buffer, from, OrderedEvent(std::in_place_type<RecordsLost>, RecordsLost{l->lost, true}));
      order_.push(buffer, to, OrderedEvent(std::in_place_type<RecordsLost>, RecordsLost{l->lost, false}));
      last_time_[buffer] = to;
      return ok_status();
    }
    const auto* s = std::get_if<perfdata::SampleRecord>(&r);
    if (!s) return ok_status();  // no other record types are asked for
    SchedEvent e;
    e.time = s->time;
    e.cpu = s->cpu;
    e.pid = s->pid;
    e.tid = s->tid;
    if (!decoder_.decode(s->raw, e)) {
      ++undecodable_;
      return ok_status();
    }
    e.callchain = s->callchain;
    cut_ += e.callchain.cut();
    e.user_stack = s->user_stack;
    e.cgroup = s->cgroup;
    if (buffer >= last_time_.size()) last_time_.resize(buffer + 1, 0);
    last_time_[buffer] = std::max(last_time_[buffer], e.time);
    order_.push(buffer, e.time, std::move(e));
    return ok_status();
  });
}

void SchedTracepoints::add_task_change(uint64_t time, const TaskChange& c) {
  OrderedEvent e(std::in_place_type<TaskChange>, c);
  order_.push_other(time, std::move(e));
}

void SchedTracepoints::add_mapping(uint64_t time, const perfdata::Mmap2Record& m) {
  OrderedEvent e(std::in_place_type<perfdata::Mmap2Record>, m);
  order_.push_other(time, std::move(e));
}

void SchedTracepoints::release(const std::function<void(uint64_t, OrderedEvent&&)>& fn, bool all) {
  if (all) order_.flush(fn);
  else order_.end_pass(fn);
}

}  // namespace offwake::sched
