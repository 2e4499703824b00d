// perf's order of a file's records, for readers that need every record in time order (perf
// offwake convert feeds scheduler events to a pairer): records are sorted within the window
// FINISHED_ROUND records allow, as perf's ordered_events does.
#pragma once

#include <cstdint>
#include <vector>

#include "perfdata/records.h"
#include "util/result.h"

namespace offwake::perfdata {

// A record with the time it sorts by and its place in the input (ties keep input order).
struct Timed {
  uint64_t time;
  uint64_t seq;
  uint64_t offset;
  Record record;
};

// perf's ordering of a file's records: at each FINISHED_ROUND, what is older than the newest
// record of the round before can be handed on; the rest waits (a CPU's buffer read late may
// still hold older records). Anything older than what was handed on is out of order.
class RoundOrderer {
 public:
  void add(Timed t);
  // FINISHED_ROUND: the records up to the previous round's newest, in time order.
  std::vector<Timed> round();
  // At the end: everything left, in time order.
  std::vector<Timed> rest();

 private:
  std::vector<Timed> take_until(uint64_t limit);
  std::vector<Timed> pending_;
  uint64_t round_max_ = 0, previous_max_ = 0;
};

// The sample_id trailer of a kernel record the reader leaves undecoded (PERF_RECORD_MMAP,
// PERF_RECORD_SWITCH, ...): its last bytes, in the layout `attr` gives every event.
Result<SampleId> sample_id_trailer(const OtherRecord& o, const perf_event_attr& attr);

// The time a record sorts by: the sample's, or its sample_id trailer's; 0 without one.
uint64_t record_time(const Record& r, const perf_event_attr& attr);

}  // namespace offwake::perfdata
