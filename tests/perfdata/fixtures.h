// Fixed inputs shared by the perf.data tests: a host, two events, and one record of every
// type the writer knows, so that file mode, pipe mode, the golden stream and the fuzz seeds
// are all made from the same known truth.
#pragma once

#include <vector>

#include "perfdata/features.h"
#include "perfdata/records.h"
#include "perfdata/writer.h"

namespace offwake::perfdata::test {

HostInfo fixed_host();

// Sample ids of the two events of two_events().
constexpr uint64_t kOffcpuIds[] = {101, 102};
constexpr uint64_t kWakeupId = 201;

// "offcpu" (ids 101, 102) and "wakeup" (id 201): IDENTIFIER-led, sample_id_all, same
// sample_id layout; wakeup also has PERF_SAMPLE_RAW.
std::vector<EventDesc> two_events();
// One event, no ids, sample_id_all off: the smallest layout.
std::vector<EventDesc> one_event();

// Every record type, with field values that survive a round trip exactly (misc set, RAW sized
// so that it needs no padding, fields outside sample_type left zero).
std::vector<Record> every_record();
// A few records that fit one_event().
std::vector<Record> few_records();

// The attrs as a reader gives them back: attr.size is the size written (kAttrSize).
std::vector<EventDesc> as_read(std::vector<EventDesc> events);

// Writes `records` with PerfDataWriter to memory; fails the current test on any error.
Bytes write_to_memory(Mode mode, const std::vector<EventDesc>& events,
                      const std::vector<Record>& records,
                      const std::vector<BuildIdEntry>& extra_build_ids = {});

struct ReadBack {
  std::vector<EventDesc> events;
  FileInfo info;
  std::vector<Record> records;
};
// Reads everything; the Error of the first failure otherwise.
Result<ReadBack> read_all(Bytes data);

}  // namespace offwake::perfdata::test
