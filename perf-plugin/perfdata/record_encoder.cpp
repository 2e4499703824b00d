#include "perfdata/record_encoder.h"

#include "perfdata/format.h"
#include "perfdata/sample_encoder.h"

namespace offwake::perfdata {

std::string BuildId::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < size && i < bytes.size(); ++i) {
    s += digits[bytes[i] >> 4];
    s += digits[bytes[i] & 15];
  }
  return s;
}

Result<Bytes> encode_comm(const perf_event_attr& id_attr, const CommRecord& r) {
  ByteWriter w;
  begin_record(w, PERF_RECORD_COMM, r.exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
  w.put<uint32_t>(r.pid);
  w.put<uint32_t>(r.tid);
  w.put_padded_string(r.comm.substr(0, 15), 8);
  put_sample_id(w, id_attr, r.sample_id);
  return finish_record(std::move(w));
}

Result<Bytes> encode_mmap2(const perf_event_attr& id_attr, const Mmap2Record& r) {
  ByteWriter w;
  uint16_t misc = r.cpumode | (r.build_id.empty() ? 0 : kMiscMmapBuildId);
  begin_record(w, PERF_RECORD_MMAP2, misc);
  w.put<uint32_t>(r.pid);
  w.put<uint32_t>(r.tid);
  w.put<uint64_t>(r.start);
  w.put<uint64_t>(r.len);
  w.put<uint64_t>(r.pgoff);
  if (r.build_id.empty()) {
    w.put<uint32_t>(r.maj);
    w.put<uint32_t>(r.min);
    w.put<uint64_t>(r.ino);
    w.put<uint64_t>(r.ino_generation);
  } else {
    w.put<uint8_t>(r.build_id.size);
    w.put_zeros(3);
    w.put_bytes(r.build_id.bytes.data(), r.build_id.bytes.size());
  }
  w.put<uint32_t>(r.prot);
  w.put<uint32_t>(r.flags);
  w.put_padded_string(r.filename, 8);
  put_sample_id(w, id_attr, r.sample_id);
  return finish_record(std::move(w));
}

Result<Bytes> encode_task(const perf_event_attr& id_attr, const TaskRecord& r) {
  ByteWriter w;
  begin_record(w, r.exit ? PERF_RECORD_EXIT : PERF_RECORD_FORK, 0);
  w.put<uint32_t>(r.pid);
  w.put<uint32_t>(r.ppid);
  w.put<uint32_t>(r.tid);
  w.put<uint32_t>(r.ptid);
  w.put<uint64_t>(r.time);
  put_sample_id(w, id_attr, r.sample_id);
  return finish_record(std::move(w));
}

Result<Bytes> encode_lost(const perf_event_attr& id_attr, const LostRecord& r) {
  ByteWriter w;
  begin_record(w, PERF_RECORD_LOST, 0);
  w.put<uint64_t>(r.id);
  w.put<uint64_t>(r.lost);
  put_sample_id(w, id_attr, r.sample_id);
  return finish_record(std::move(w));
}

Result<Bytes> encode_lost_samples(const perf_event_attr& id_attr, const LostSamplesRecord& r) {
  ByteWriter w;
  begin_record(w, PERF_RECORD_LOST_SAMPLES, r.misc);
  w.put<uint64_t>(r.lost);
  put_sample_id(w, id_attr, r.sample_id);
  return finish_record(std::move(w));
}

Result<Bytes> encode_cgroup(const perf_event_attr& id_attr, const CgroupRecord& r) {
  ByteWriter w;
  begin_record(w, PERF_RECORD_CGROUP, 0);
  w.put<uint64_t>(r.id);
  w.put_padded_string(r.path, 8);
  put_sample_id(w, id_attr, r.sample_id);
  return finish_record(std::move(w));
}

Result<Bytes> encode_namespaces(const perf_event_attr& id_attr, const NamespacesRecord& r) {
  ByteWriter w;
  begin_record(w, PERF_RECORD_NAMESPACES, 0);
  w.put<uint32_t>(r.pid);
  w.put<uint32_t>(r.tid);
  w.put<uint64_t>(r.namespaces.size());
  for (const NamespaceLink& l : r.namespaces) {
    w.put<uint64_t>(l.dev);
    w.put<uint64_t>(l.ino);
  }
  put_sample_id(w, id_attr, r.sample_id);
  return finish_record(std::move(w));
}

Bytes encode_finished_round() {
  ByteWriter w;
  begin_record(w, kRecordFinishedRound, 0);
  return finish_record(std::move(w)).value();
}

Bytes encode_finished_init() {
  ByteWriter w;
  begin_record(w, kRecordFinishedInit, 0);
  return finish_record(std::move(w)).value();
}

Result<Bytes> encode_header_attr(const EventDesc& event) {
  ByteWriter w;
  begin_record(w, kRecordHeaderAttr, 0);
  perf_event_attr attr = event.attr;
  attr.size = kAttrSize;
  w.put_bytes(&attr, kAttrSize);
  for (uint64_t id : event.ids) w.put<uint64_t>(id);
  return finish_record(std::move(w));
}

Result<Bytes> encode_header_feature(int feature, std::span<const uint8_t> section) {
  ByteWriter w;
  begin_record(w, kRecordHeaderFeature, 0);
  w.put<uint64_t>(static_cast<uint64_t>(feature));
  w.put_bytes(section.data(), section.size());
  return finish_record(std::move(w));
}

// ---- decoders ----

static Result<Record> decode_comm(const perf_event_attr& a, uint16_t misc, ByteReader& r) {
  CommRecord c;
  c.exec = misc & PERF_RECORD_MISC_COMM_EXEC;
  OFFWAKE_TRY(r.read(c.pid));
  OFFWAKE_TRY(r.read(c.tid));
  size_t name_len = r.remaining() - std::min(r.remaining(), sample_id_size(a));
  auto comm = r.get_fixed_string(name_len);
  if (!comm) return comm.error();
  c.comm = *comm;
  auto sid = get_sample_id(r, a);
  if (!sid) return sid.error();
  c.sample_id = *sid;
  return Record{c};
}

static Result<Record> decode_mmap2(const perf_event_attr& a, uint16_t misc, ByteReader& r) {
  Mmap2Record m;
  m.cpumode = misc & PERF_RECORD_MISC_CPUMODE_MASK;
  OFFWAKE_TRY(r.read(m.pid));
  OFFWAKE_TRY(r.read(m.tid));
  OFFWAKE_TRY(r.read(m.start));
  OFFWAKE_TRY(r.read(m.len));
  OFFWAKE_TRY(r.read(m.pgoff));
  // Both layouts give the next 24 bytes: u8 build id size, 3 reserved, 20 bytes of build id;
  // or u32 maj, u32 min, u64 ino, u64 ino_generation. The kernel sets
  // PERF_RECORD_MISC_MMAP_BUILD_ID on an event it shares between the events of the system
  // while any of them asks for build ids, and the bit stays set for the others: their
  // records carry dev/inode under it (perf 6.1 aborts on them). A size no build id has, or
  // non-zero reserved bytes, give such a record away.
  uint32_t head = 0;
  OFFWAKE_TRY(r.read(head));
  if ((misc & kMiscMmapBuildId) && (head & 0xff) <= m.build_id.bytes.size() && (head >> 8) == 0) {
    m.build_id.size = static_cast<uint8_t>(head & 0xff);
    auto id = r.get_bytes(m.build_id.bytes.size());
    if (!id) return id.error();
    std::copy(id->begin(), id->end(), m.build_id.bytes.begin());
  } else {
    m.maj = head;
    OFFWAKE_TRY(r.read(m.min));
    OFFWAKE_TRY(r.read(m.ino));
    OFFWAKE_TRY(r.read(m.ino_generation));
  }
  OFFWAKE_TRY(r.read(m.prot));
  OFFWAKE_TRY(r.read(m.flags));
  size_t name_len = r.remaining() - std::min(r.remaining(), sample_id_size(a));
  auto name = r.get_fixed_string(name_len);
  if (!name) return name.error();
  m.filename = *name;
  auto sid = get_sample_id(r, a);
  if (!sid) return sid.error();
  m.sample_id = *sid;
  return Record{m};
}

static Result<Record> decode_task(const perf_event_attr& a, bool exit, ByteReader& r) {
  TaskRecord t;
  t.exit = exit;
  OFFWAKE_TRY(r.read(t.pid));
  OFFWAKE_TRY(r.read(t.ppid));
  OFFWAKE_TRY(r.read(t.tid));
  OFFWAKE_TRY(r.read(t.ptid));
  OFFWAKE_TRY(r.read(t.time));
  auto sid = get_sample_id(r, a);
  if (!sid) return sid.error();
  t.sample_id = *sid;
  return Record{t};
}

static Result<Record> decode_cgroup(const perf_event_attr& a, ByteReader& r) {
  CgroupRecord c;
  OFFWAKE_TRY(r.read(c.id));
  const size_t trailer = sample_id_size(a);
  if (r.remaining() < trailer) return Error::bad_input("cgroup record: too short for its sample_id");
  auto path = r.get_fixed_string(r.remaining() - trailer);
  if (!path) return path.error();
  c.path = *path;
  auto sid = get_sample_id(r, a);
  if (!sid) return sid.error();
  c.sample_id = *sid;
  return Record{c};
}

static Result<Record> decode_namespaces(const perf_event_attr& a, ByteReader& r) {
  NamespacesRecord n;
  uint64_t nr = 0;
  OFFWAKE_TRY(r.read(n.pid));
  OFFWAKE_TRY(r.read(n.tid));
  OFFWAKE_TRY(r.read(nr));
  if (nr > r.remaining() / sizeof(NamespaceLink))
    return Error::bad_input("namespaces record: " + std::to_string(nr) + " namespaces overrun the record");
  n.namespaces.resize(nr);
  for (NamespaceLink& l : n.namespaces) {
    OFFWAKE_TRY(r.read(l.dev));
    OFFWAKE_TRY(r.read(l.ino));
  }
  auto sid = get_sample_id(r, a);
  if (!sid) return sid.error();
  n.sample_id = *sid;
  return Record{n};
}

Result<Record> decode_record(const perf_event_attr& id_attr, const perf_event_header& h,
                             std::span<const uint8_t> payload) {
  ByteReader r(payload, "record type " + std::to_string(h.type));
  switch (h.type) {
    case PERF_RECORD_COMM: return decode_comm(id_attr, h.misc, r);
    case PERF_RECORD_MMAP2: return decode_mmap2(id_attr, h.misc, r);
    case PERF_RECORD_FORK: return decode_task(id_attr, false, r);
    case PERF_RECORD_EXIT: return decode_task(id_attr, true, r);
    case PERF_RECORD_CGROUP: return decode_cgroup(id_attr, r);
    case PERF_RECORD_NAMESPACES: return decode_namespaces(id_attr, r);
    case PERF_RECORD_LOST: {
      LostRecord l;
      OFFWAKE_TRY(r.read(l.id));
      OFFWAKE_TRY(r.read(l.lost));
      auto sid = get_sample_id(r, id_attr);
      if (!sid) return sid.error();
      l.sample_id = *sid;
      return Record{l};
    }
    case PERF_RECORD_LOST_SAMPLES: {
      LostSamplesRecord l;
      l.misc = h.misc;
      OFFWAKE_TRY(r.read(l.lost));
      auto sid = get_sample_id(r, id_attr);
      if (!sid) return sid.error();
      l.sample_id = *sid;
      return Record{l};
    }
    case kRecordFinishedRound: return Record{FinishedRoundRecord{}};
    case kRecordFinishedInit: return Record{FinishedInitRecord{}};
    default: {
      OtherRecord o;
      o.type = h.type;
      o.misc = h.misc;
      o.payload.assign(payload.begin(), payload.end());
      return Record{o};
    }
  }
}

}  // namespace offwake::perfdata
