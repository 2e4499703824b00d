// The time a record of a file sorts by, for readers that put every record in time order
// (perf offwake convert feeds scheduler events to a pairer, through TimeOrder).
#pragma once

#include <cstdint>
#include <vector>

#include "perfdata/time_order_queue.h"

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

// The sample_id trailer of a kernel record the reader leaves undecoded (PERF_RECORD_MMAP,
// PERF_RECORD_SWITCH, ...): its last bytes, in the layout `attr` gives every event.
Result<SampleId> sample_id_trailer(const OtherRecord& o, const perf_event_attr& attr);

// The time a record sorts by: the sample's, or its sample_id trailer's; 0 without one.
uint64_t record_time(const Record& r, const perf_event_attr& attr);

}  // namespace offwake::perfdata
