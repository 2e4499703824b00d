#include "report/sample_stream.h"

#include <algorithm>
#include <cstring>

#include "record/offwake_events.h"

namespace offwake::report {

using perfdata::Record;
using perfdata::SampleRecord;

namespace {

uint64_t record_time(const Record& r) {
  return std::visit(
      [](const auto& rec) -> uint64_t {
        using T = std::decay_t<decltype(rec)>;
        if constexpr (std::is_same_v<T, SampleRecord>) return rec.time;
        else if constexpr (requires { rec.sample_id; }) return rec.sample_id.time;
        else return 0;
      },
      r);
}

}  // namespace

Status SampleStream::run(SampleVisitor& visitor, const std::function<void(uint64_t)>& progress) {
  symbolizer_.add_build_ids(reader_.info().build_ids);
  std::vector<Record> round;
  uint64_t records = 0;
  for (;;) {
    auto next = reader_.next();
    if (!next) return next.error();
    if (!*next) break;
    if (progress && (++records & 0xffff) == 0) progress(records);
    Record& r = **next;
    if (std::holds_alternative<perfdata::FinishedRoundRecord>(r)) {
      OFFWAKE_TRY(flush(round, visitor));
      continue;
    }
    round.push_back(std::move(r));
  }
  OFFWAKE_TRY(flush(round, visitor));
  return dispatch_pending(visitor);
}

Status SampleStream::flush(std::vector<Record>& round, SampleVisitor& visitor) {
  std::stable_sort(round.begin(), round.end(),
                   [](const Record& a, const Record& b) { return record_time(a) < record_time(b); });
  for (Record& r : round) OFFWAKE_TRY(handle(r, visitor));
  round.clear();
  return ok_status();
}

Status SampleStream::handle(const Record& r, SampleVisitor& visitor) {
  const auto* s = std::get_if<SampleRecord>(&r);
  if (!s) {
    symbolizer_.observe(r);
    visitor.observed(r);
    return ok_status();
  }
  const perfdata::EventDesc* e = reader_.event_for(*s);
  if (!e) return Error("a sample of an unknown event (id " + std::to_string(s->id) + ")");
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
    if (s->raw.size() >= sizeof(OffwakeRaw)) {
      OffwakeRaw raw;
      std::memcpy(&raw, s->raw.data(), sizeof raw);
      p.expected_hops = chain_hops(raw.chain);
      p.chain_end = chain_end(raw.chain);
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
