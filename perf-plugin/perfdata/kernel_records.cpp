#include "perfdata/kernel_records.h"

#include <algorithm>

#include "perfdata/bytes.h"
#include "perfdata/format.h"
#include "perfdata/sample_encoder.h"
#include "perfdata/time_order.h"

namespace offwake::perfdata {

bool is_mmap(const OtherRecord& o) { return o.type == PERF_RECORD_MMAP; }

Result<Mmap2Record> decode_mmap(const OtherRecord& o, const perf_event_attr& id_attr) {
  ByteReader br(o.payload, "mmap record");
  Mmap2Record m;
  m.cpumode = o.misc & PERF_RECORD_MISC_CPUMODE_MASK;
  OFFWAKE_TRY(br.read(m.pid));
  OFFWAKE_TRY(br.read(m.tid));
  OFFWAKE_TRY(br.read(m.start));
  OFFWAKE_TRY(br.read(m.len));
  OFFWAKE_TRY(br.read(m.pgoff));
  const size_t trailer = sample_id_size(id_attr);
  auto name = br.get_fixed_string(br.remaining() - std::min(br.remaining(), trailer));
  if (!name) return name.error();
  m.filename = *name;
  auto s = get_sample_id(br, id_attr);
  if (!s) return s.error();
  m.sample_id = *s;
  m.prot = 5;  // PROT_READ | PROT_EXEC
  return m;
}

bool is_switch(const OtherRecord& o) { return o.type == PERF_RECORD_SWITCH; }
bool is_switch_out(const OtherRecord& o) { return is_switch(o) && (o.misc & PERF_RECORD_MISC_SWITCH_OUT); }

Result<SwitchRecord> decode_switch(const OtherRecord& o, const perf_event_attr& id_attr) {
  auto sid = sample_id_trailer(o, id_attr);
  if (!sid) return sid.error();
  return SwitchRecord{is_switch_out(o), *sid};
}

bool is_thread_map(const OtherRecord& o) { return o.type == kRecordThreadMap; }

bool is_user_record(const OtherRecord& o) { return o.type >= kRecordUserTypeStart; }

Result<ThreadMapRecord> decode_thread_map(const OtherRecord& o) {
  ByteReader br(o.payload, "thread map");
  ThreadMapRecord t;
  OFFWAKE_TRY(br.read(t.nr));
  // Entries are a pid (u64) and a comm (char[16]); a short record keeps those it holds.
  constexpr size_t kCommSize = 16;
  while (t.pids.size() < t.nr && br.remaining() >= sizeof(uint64_t)) {
    uint64_t pid = 0;
    OFFWAKE_TRY(br.read(pid));
    t.pids.push_back(static_cast<int64_t>(pid));
    if (br.remaining() < kCommSize) break;
    OFFWAKE_TRY(br.skip(kCommSize));
  }
  return t;
}

}  // namespace offwake::perfdata
