#include "perfdata/sample_encoder.h"

#include <bit>
#include <cstring>

#include "perfdata/format.h"

namespace offwake::perfdata {

namespace {

// PERF_SAMPLE_REGS_USER: u64 abi, then (unless the abi is NONE: no user context) one u64 per
// bit of the event's sample_regs_user.
Status decode_user_regs(ByteReader& r, uint64_t mask, UserStackDump& d) {
  OFFWAKE_TRY(r.read(d.abi));
  d.regs_mask = mask;
  if (d.abi == PERF_SAMPLE_REGS_ABI_NONE) return ok_status();
  const size_t n = static_cast<size_t>(std::popcount(mask));
  auto regs = r.get_bytes(n * sizeof(uint64_t));
  if (!regs) return regs.error();
  d.regs.resize(n);
  if (n) std::memcpy(d.regs.data(), regs->data(), regs->size());
  return ok_status();
}

// PERF_SAMPLE_STACK_USER: u64 size, then (if size is not 0) size bytes and u64 dyn_size, the
// bytes the kernel filled: those are kept.
Status decode_user_stack(ByteReader& r, UserStackDump& d) {
  OFFWAKE_TRY(r.read(d.stack_size));
  if (d.stack_size == 0) return ok_status();
  if (d.stack_size > r.remaining())
    return Error::bad_input("sample: user stack copy of " + std::to_string(d.stack_size) + " bytes overruns the record");
  auto data = r.get_bytes(static_cast<size_t>(d.stack_size));
  if (!data) return data.error();
  uint64_t filled = 0;
  OFFWAKE_TRY(r.read(filled));
  if (filled > d.stack_size)
    return Error::bad_input("sample: user stack copy says " + std::to_string(filled) + " of its " +
                            std::to_string(d.stack_size) + " bytes are filled");
  d.stack.assign(data->begin(), data->begin() + static_cast<ptrdiff_t>(filled));
  return ok_status();
}

}  // namespace

Status check_sample_type(uint64_t sample_type) {
  uint64_t unsupported = sample_type & ~kSupportedSampleType;
  if (unsupported) {
    return Error::unsupported("sample_type bit " + std::to_string(std::countr_zero(unsupported)) +
                                  " is not supported", EINVAL);
  }
  return ok_status();
}

void begin_record(ByteWriter& w, uint32_t type, uint16_t misc) {
  perf_event_header h{type, misc, 0};
  w.put(h);
}

Result<Bytes> finish_record(ByteWriter&& w) {
  w.pad_to(8);
  if (w.size() > kMaxRecordSize)
    return Error("record of " + std::to_string(w.size()) + " bytes exceeds the 64 KiB limit", E2BIG);
  Bytes b = w.take();
  uint16_t size = static_cast<uint16_t>(b.size());
  std::memcpy(b.data() + offsetof(perf_event_header, size), &size, sizeof size);
  return b;
}

Result<Bytes> encode_sample(const perf_event_attr& attr, const SampleRecord& s) {
  const uint64_t t = attr.sample_type;
  OFFWAKE_TRY(check_sample_type(t));
  ByteWriter w;
  begin_record(w, PERF_RECORD_SAMPLE, s.misc ? s.misc : s.callchain.leaf_cpumode());
  if (t & PERF_SAMPLE_IDENTIFIER) w.put<uint64_t>(s.id);
  if (t & PERF_SAMPLE_IP) w.put<uint64_t>(s.ip);
  if (t & PERF_SAMPLE_TID) {
    w.put<uint32_t>(s.pid);
    w.put<uint32_t>(s.tid);
  }
  if (t & PERF_SAMPLE_TIME) w.put<uint64_t>(s.time);
  if (t & PERF_SAMPLE_ADDR) w.put<uint64_t>(s.addr);
  if (t & PERF_SAMPLE_ID) w.put<uint64_t>(s.id);
  if (t & PERF_SAMPLE_STREAM_ID) w.put<uint64_t>(s.stream_id);
  if (t & PERF_SAMPLE_CPU) {
    w.put<uint32_t>(s.cpu);
    w.put<uint32_t>(0);
  }
  if (t & PERF_SAMPLE_PERIOD) w.put<uint64_t>(s.period);
  if (t & PERF_SAMPLE_CALLCHAIN) {
    std::vector<uint64_t> ips = s.callchain.to_perf_ips();
    w.put<uint64_t>(ips.size());
    w.put_bytes(ips.data(), ips.size() * sizeof(uint64_t));
  }
  if (t & PERF_SAMPLE_RAW) {
    // The u32 size plus the data must end u64-aligned, as the kernel pads it.
    size_t padded = align8(s.raw.size() + sizeof(uint32_t)) - sizeof(uint32_t);
    w.put<uint32_t>(static_cast<uint32_t>(padded));
    w.put_bytes(s.raw.data(), s.raw.size());
    w.put_zeros(padded - s.raw.size());
  }
  if (t & PERF_SAMPLE_REGS_USER) {
    const UserStackDump& d = s.user_stack;
    w.put<uint64_t>(d.abi);
    if (d.abi != PERF_SAMPLE_REGS_ABI_NONE) {
      if (d.regs.size() != static_cast<size_t>(std::popcount(attr.sample_regs_user)))
        return Error("sample: " + std::to_string(d.regs.size()) + " user registers for a mask of " +
                     std::to_string(std::popcount(attr.sample_regs_user)), EINVAL);
      w.put_bytes(d.regs.data(), d.regs.size() * sizeof(uint64_t));
    }
  }
  if (t & PERF_SAMPLE_STACK_USER) {
    const UserStackDump& d = s.user_stack;
    if (d.stack_size % 8 || d.stack.size() > d.stack_size)
      return Error("sample: a user stack copy of " + std::to_string(d.stack_size) + " bytes (" +
                   std::to_string(d.stack.size()) + " filled) is not whole u64s", EINVAL);
    w.put<uint64_t>(d.stack_size);
    if (d.stack_size) {
      w.put_bytes(d.stack.data(), d.stack.size());
      w.put_zeros(d.stack_size - d.stack.size());
      w.put<uint64_t>(d.stack.size());
    }
  }
  if (t & PERF_SAMPLE_DATA_SRC) w.put<uint64_t>(s.data_src);
  if (t & PERF_SAMPLE_CGROUP) w.put<uint64_t>(s.cgroup);
  return finish_record(std::move(w));
}

Result<SampleRecord> decode_sample(const perf_event_attr& attr, uint16_t misc,
                                   std::span<const uint8_t> payload) {
  const uint64_t t = attr.sample_type;
  OFFWAKE_TRY(check_sample_type(t));
  ByteReader r(payload, "sample");
  SampleRecord s;
  s.misc = misc;
  if (t & PERF_SAMPLE_IDENTIFIER) OFFWAKE_TRY(r.read(s.id));
  if (t & PERF_SAMPLE_IP) OFFWAKE_TRY(r.read(s.ip));
  if (t & PERF_SAMPLE_TID) {
    OFFWAKE_TRY(r.read(s.pid));
    OFFWAKE_TRY(r.read(s.tid));
  }
  if (t & PERF_SAMPLE_TIME) OFFWAKE_TRY(r.read(s.time));
  if (t & PERF_SAMPLE_ADDR) OFFWAKE_TRY(r.read(s.addr));
  if (t & PERF_SAMPLE_ID) OFFWAKE_TRY(r.read(s.id));
  if (t & PERF_SAMPLE_STREAM_ID) OFFWAKE_TRY(r.read(s.stream_id));
  if (t & PERF_SAMPLE_CPU) {
    uint32_t reserved;
    OFFWAKE_TRY(r.read(s.cpu));
    OFFWAKE_TRY(r.read(reserved));
    (void)reserved;
  }
  if (t & PERF_SAMPLE_PERIOD) OFFWAKE_TRY(r.read(s.period));
  if (t & PERF_SAMPLE_CALLCHAIN) {
    uint64_t nr;
    OFFWAKE_TRY(r.read(nr));
    if (nr > r.remaining() / sizeof(uint64_t))
      return Error::bad_input("sample: callchain of " + std::to_string(nr) + " entries overruns the record");
    auto raw = r.get_bytes(nr * sizeof(uint64_t));
    if (!raw) return raw.error();
    std::vector<uint64_t> ips(nr);
    if (nr) std::memcpy(ips.data(), raw->data(), raw->size());  // memcpy(nullptr, ..., 0) is UB
    auto chain = Callchain::from_perf_ips(ips);
    if (!chain) return chain.error().context("sample");
    s.callchain = std::move(chain).value();
  }
  if (t & PERF_SAMPLE_RAW) {
    uint32_t size;
    OFFWAKE_TRY(r.read(size));
    auto data = r.get_bytes(size);
    if (!data) return data.error();
    s.raw.assign(data->begin(), data->end());
  }
  if (t & PERF_SAMPLE_REGS_USER) OFFWAKE_TRY(decode_user_regs(r, attr.sample_regs_user, s.user_stack));
  if (t & PERF_SAMPLE_STACK_USER) OFFWAKE_TRY(decode_user_stack(r, s.user_stack));
  if (t & PERF_SAMPLE_DATA_SRC) OFFWAKE_TRY(r.read(s.data_src));
  if (t & PERF_SAMPLE_CGROUP) OFFWAKE_TRY(r.read(s.cgroup));
  return s;
}

size_t sample_id_size(const perf_event_attr& attr) {
  if (!attr.sample_id_all) return 0;
  return 8 * std::popcount(attr.sample_type & kSampleIdBits);
}

void put_sample_id(ByteWriter& w, const perf_event_attr& attr, const SampleId& id) {
  if (!attr.sample_id_all) return;
  const uint64_t t = attr.sample_type;
  if (t & PERF_SAMPLE_TID) {
    w.put<uint32_t>(id.pid);
    w.put<uint32_t>(id.tid);
  }
  if (t & PERF_SAMPLE_TIME) w.put<uint64_t>(id.time);
  if (t & PERF_SAMPLE_ID) w.put<uint64_t>(id.id);
  if (t & PERF_SAMPLE_STREAM_ID) w.put<uint64_t>(id.stream_id);
  if (t & PERF_SAMPLE_CPU) {
    w.put<uint32_t>(id.cpu);
    w.put<uint32_t>(0);
  }
  if (t & PERF_SAMPLE_IDENTIFIER) w.put<uint64_t>(id.id);
}

Result<SampleId> get_sample_id(ByteReader& r, const perf_event_attr& attr) {
  SampleId id;
  if (!attr.sample_id_all) return id;
  const uint64_t t = attr.sample_type;
  uint32_t reserved = 0;
  if (t & PERF_SAMPLE_TID) {
    OFFWAKE_TRY(r.read(id.pid));
    OFFWAKE_TRY(r.read(id.tid));
  }
  if (t & PERF_SAMPLE_TIME) OFFWAKE_TRY(r.read(id.time));
  if (t & PERF_SAMPLE_ID) OFFWAKE_TRY(r.read(id.id));
  if (t & PERF_SAMPLE_STREAM_ID) OFFWAKE_TRY(r.read(id.stream_id));
  if (t & PERF_SAMPLE_CPU) {
    OFFWAKE_TRY(r.read(id.cpu));
    OFFWAKE_TRY(r.read(reserved));
  }
  if (t & PERF_SAMPLE_IDENTIFIER) OFFWAKE_TRY(r.read(id.id));
  return id;
}

}  // namespace offwake::perfdata
