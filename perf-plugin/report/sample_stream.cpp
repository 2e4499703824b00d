#include "report/sample_stream.h"

#include <algorithm>

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
  return dispatch_pending(nullptr, visitor);
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
    if (e->name == kOffwakeWakerEvent) {
      OFFWAKE_TRY(dispatch_pending(s, visitor));
      return visitor.sample(*e, *s);
    }
    OFFWAKE_TRY(dispatch_pending(nullptr, visitor));
  }
  if (e->name == kOffwakeTimeEvent) {
    pending_ = *s;
    pending_event_ = e;
    return ok_status();
  }
  return visitor.sample(*e, *s);
}

Status SampleStream::dispatch_pending(const SampleRecord* waker, SampleVisitor& visitor) {
  if (!pending_) return ok_status();
  Status st = visitor.offwake(*pending_event_, *pending_, waker);
  pending_.reset();
  return st;
}

}  // namespace offwake::report
