// Records the reader leaves as OtherRecord, for the readers that need them (perf offwake
// convert): PERF_RECORD_MMAP, which perf synthesizes for the kernel and its modules,
// PERF_RECORD_SWITCH (--switch-events) and perf's PERF_RECORD_THREAD_MAP. Most readers skip
// them, so decoding them is asked for, not done for every record.
#pragma once

#include <cstdint>
#include <vector>

#include "perfdata/records.h"
#include "util/result.h"

namespace offwake::perfdata {

// PERF_RECORD_MMAP as the MMAP2 it stands for: no device, inode or build id; PROT_READ |
// PROT_EXEC, for the kernel writes MMAP records of executable mappings only.
bool is_mmap(const OtherRecord& o);
Result<Mmap2Record> decode_mmap(const OtherRecord& o, const perf_event_attr& id_attr);

// PERF_RECORD_SWITCH: its task was switched in, or out (PERF_RECORD_MISC_SWITCH_OUT); the
// task, time and CPU are in the sample_id trailer.
struct SwitchRecord {
  bool out = false;
  SampleId sample_id;
};
bool is_switch(const OtherRecord& o);
bool is_switch_out(const OtherRecord& o);
Result<SwitchRecord> decode_switch(const OtherRecord& o, const perf_event_attr& id_attr);

// PERF_RECORD_THREAD_MAP: the threads perf record was given, one entry of pid -1 when it was
// system-wide. `pids` holds the entries the record has room for, at most `nr`.
struct ThreadMapRecord {
  uint64_t nr = 0;
  std::vector<int64_t> pids;
  // Whether the recording followed tasks rather than the whole system.
  bool per_task() const { return nr > 0 && !pids.empty() && pids[0] != -1; }
};
bool is_thread_map(const OtherRecord& o);

// A record of perf's own (PERF_RECORD_HEADER_ATTR, THREAD_MAP, ...), not the kernel's: it has
// no time and no sample_id trailer.
bool is_user_record(const OtherRecord& o);
Result<ThreadMapRecord> decode_thread_map(const OtherRecord& o);

}  // namespace offwake::perfdata
