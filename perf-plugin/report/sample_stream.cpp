#include "report/sample_stream.h"

#include <algorithm>

#include "perfdata/format.h"
#include "perfdata/time_order.h"
#include "samples/offwake_events.h"

namespace offwake::report {

using perfdata::Record;
using perfdata::SampleRecord;

namespace {

// The records perf record adds of its own (FINISHED_INIT, THREAD_MAP, ...), not the kernel's.
bool untimed(const Record& r) {
  if (std::holds_alternative<perfdata::FinishedInitRecord>(r)) return true;
  const auto* o = std::get_if<perfdata::OtherRecord>(&r);
  return o && o->type >= perfdata::kRecordHeaderAttr;
}

}  // namespace

Status SampleStream::run(SampleVisitor& visitor, const std::function<void(uint64_t)>& progress) {
  symbolizer_.add_build_ids(reader_.info().build_ids);
  if (reader_.mode() == perfdata::Mode::kFile) {
    OFFWAKE_TRY(order<uint64_t>(
        visitor, progress, [](Record&&, uint64_t offset) { return offset; },
        [this](uint64_t offset) { return reader_.read_at(offset); }));
  } else {
    OFFWAKE_TRY(order<Record>(
        visitor, progress, [](Record&& r, uint64_t) { return std::move(r); },
        [](Record&& r) -> Result<Record> { return std::move(r); }));
  }
  return dispatch_pending(visitor);
}

template <typename Held, typename Keep, typename Take>
Status SampleStream::order(SampleVisitor& visitor, const std::function<void(uint64_t)>& progress, Keep keep,
                           Take take) {
  perfdata::FileRounds<Held> rounds;
  Status failed = ok_status();
  auto hand_on = [&](uint64_t, Held held) {
    if (!failed) return;
    Result<Record> r = take(std::move(held));
    failed = r ? handle(*r, visitor) : Status(r.error());
  };
  uint64_t records = 0;
  for (;;) {
    const uint64_t offset = reader_.input_offset();
    auto next = reader_.next();
    if (!next) return next.error();
    if (!*next) break;
    if (progress && (++records & 0xffff) == 0) progress(records);
    Record& r = **next;
    if (std::holds_alternative<perfdata::FinishedRoundRecord>(r)) {
      ++stats_.rounds;
      stats_.most_waiting = std::max<uint64_t>(stats_.most_waiting, rounds.waiting());
      rounds.round(hand_on);
      OFFWAKE_TRY(failed);
      continue;
    }
    if (untimed(r)) {
      OFFWAKE_TRY(handle(r, visitor));  // as perf does: perf's own records have no time
      continue;
    }
    const uint64_t time = perfdata::record_time(r, reader_.events()[0].attr);
    rounds.add(time, keep(std::move(r), offset));
  }
  stats_.most_waiting = std::max<uint64_t>(stats_.most_waiting, rounds.waiting());
  rounds.rest(hand_on);
  stats_.out_of_order = rounds.late();
  return failed;
}

Status SampleStream::handle(const Record& r, SampleVisitor& visitor) {
  const auto* s = std::get_if<SampleRecord>(&r);
  if (!s) {
    symbolizer_.observe(r);
    visitor.observed(r);
    return ok_status();
  }
  const perfdata::EventDesc* e = reader_.event_for(*s);
  if (!e) return Error::bad_input(reader_.name() + ": a sample of an unknown event (id " + std::to_string(s->id) + ")");
  if (pending_) {
    if (follows(*e)) {
      // The last sample of the group is handed on as it is, the others are kept (a group may
      // span rounds): a group of a blocked sample and its waker copies nothing more.
      if (pending_->followers.size() + 1 == 1 + 2 * size_t{pending_->expected_hops})
        return dispatch_pending(visitor, e, s);
      pending_->followers.push_back({e, *s});
      return ok_status();
    }
    OFFWAKE_TRY(dispatch_pending(visitor));
  }
  if (e->name == kOffwakeTimeEvent) {
    Pending p;
    p.event = e;
    p.blocked = *s;
    // The hops announced; without our raw data (a recording by something else) the waker only.
    if (auto raw = decode_offwake_raw(s->raw)) {
      p.expected_hops = chain_hops(raw->head.chain);
      p.chain_end = chain_end(raw->head.chain);
    }
    pending_ = std::move(p);
    return ok_status();
  }
  if (e->name == kOffwakeHopBlockedEvent || e->name == kOffwakeHopWakerEvent) ++stats_.stray_hop_samples;
  return visitor.sample(*e, *s);
}

bool SampleStream::follows(const perfdata::EventDesc& e) const {
  const size_t n = pending_->followers.size();
  if (n >= 1 + 2 * size_t{pending_->expected_hops}) return false;
  if (n == 0) return e.name == kOffwakeWakerEvent;
  return e.name == (n % 2 ? kOffwakeHopBlockedEvent : kOffwakeHopWakerEvent);
}

Status SampleStream::dispatch_pending(SampleVisitor& visitor, const perfdata::EventDesc* last_event,
                                      const SampleRecord* last) {
  if (!pending_) return ok_status();
  Pending p = std::move(*pending_);
  pending_.reset();
  std::vector<std::pair<const perfdata::EventDesc*, const SampleRecord*>> followers;
  followers.reserve(p.followers.size() + 1);
  for (const Follower& f : p.followers) followers.emplace_back(f.event, &f.sample);
  if (last) followers.emplace_back(last_event, last);

  OffwakeGroup group;
  group.expected_hops = p.expected_hops;
  group.chain_end = p.chain_end;
  for (const perfdata::EventDesc& e : reader_.events()) group.chain_events |= e.name == kOffwakeHopBlockedEvent;
  if (!followers.empty()) group.waker = followers[0].second;
  for (size_t i = 1; i < followers.size(); i += 2)
    group.hops.push_back({followers[i].second, i + 1 < followers.size() ? followers[i + 1].second : nullptr});
  if (group.cut_short()) ++stats_.groups_cut_short;
  OFFWAKE_TRY(visitor.offwake(*p.event, p.blocked, group));
  for (const auto& [event, sample] : followers) OFFWAKE_TRY(visitor.sample(*event, *sample));
  return ok_status();
}

}  // namespace offwake::report
