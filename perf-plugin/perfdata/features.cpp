#include "perfdata/features.h"

#include <algorithm>

#include "perfdata/format.h"
#include "perfdata/sample_encoder.h"

namespace offwake::perfdata {

static Bytes string_section(const std::string& s) {
  ByteWriter w;
  w.put_header_string(s);
  return w.take();
}

FeatureSections encode_host_features(const HostInfo& host) {
  FeatureSections f;
  f[kFeatHostname] = string_section(host.hostname);
  f[kFeatOsRelease] = string_section(host.os_release);
  f[kFeatVersion] = string_section(host.version);
  f[kFeatArch] = string_section(host.arch);
  {
    ByteWriter w;
    w.put<uint32_t>(host.nr_cpus_available);
    w.put<uint32_t>(host.nr_cpus_online);
    f[kFeatNrCpus] = w.take();
  }
  f[kFeatCpuDesc] = string_section(host.cpu_desc);
  if (!host.cpu_id.empty()) f[kFeatCpuId] = string_section(host.cpu_id);
  {
    ByteWriter w;
    w.put<uint64_t>(host.total_mem_kb);
    f[kFeatTotalMem] = w.take();
  }
  {
    ByteWriter w;
    w.put<uint32_t>(static_cast<uint32_t>(host.cmdline.size()));
    for (const auto& arg : host.cmdline) w.put_header_string(arg);
    f[kFeatCmdline] = w.take();
  }
  return f;
}

Bytes encode_event_desc(std::span<const EventDesc> events) {
  ByteWriter w;
  w.put<uint32_t>(static_cast<uint32_t>(events.size()));
  w.put<uint32_t>(kAttrSize);
  for (const auto& e : events) {
    perf_event_attr attr = e.attr;
    attr.size = kAttrSize;
    w.put_bytes(&attr, kAttrSize);
    w.put<uint32_t>(static_cast<uint32_t>(e.ids.size()));
    w.put_header_string(e.name);
    for (uint64_t id : e.ids) w.put<uint64_t>(id);
  }
  return w.take();
}

Bytes encode_build_ids(std::span<const BuildIdEntry> entries) {
  ByteWriter w;
  for (const auto& e : entries) {
    size_t start = w.size();
    begin_record(w, kRecordHeaderBuildId, e.cpumode | kMiscBuildIdSize);
    w.put<int32_t>(e.pid);
    w.put_bytes(e.build_id.bytes.data(), e.build_id.bytes.size());
    w.put<uint8_t>(e.build_id.size);
    w.put_zeros(3);
    w.put_padded_string(e.filename, kNameAlign);
    w.patch<uint16_t>(start + offsetof(perf_event_header, size),
                      static_cast<uint16_t>(w.size() - start));
  }
  return w.take();
}

Bytes encode_sample_time(uint64_t first, uint64_t last) {
  ByteWriter w;
  w.put<uint64_t>(first);
  w.put<uint64_t>(last);
  return w.take();
}

static Status decode_string(ByteReader& r, std::string& out) {
  auto s = r.get_header_string();
  if (!s) return s.error();
  out = *s;
  return ok_status();
}

static Status decode_event_desc(ByteReader& r, FileInfo& info) {
  uint32_t nr = 0, attr_size = 0;
  OFFWAKE_TRY(r.read(nr));
  OFFWAKE_TRY(r.read(attr_size));
  if (attr_size < PERF_ATTR_SIZE_VER0 || attr_size > 4096)
    return Error::bad_input("event desc: bad attr size " + std::to_string(attr_size));
  for (uint32_t i = 0; i < nr; ++i) {
    EventDesc e;
    auto raw = r.get_bytes(attr_size);
    if (!raw) return raw.error();
    std::memcpy(&e.attr, raw->data(), std::min<size_t>(attr_size, sizeof e.attr));
    uint32_t nr_ids = 0;
    OFFWAKE_TRY(r.read(nr_ids));
    OFFWAKE_TRY(decode_string(r, e.name));
    if (nr_ids > r.remaining() / 8) return Error::bad_input("event desc: id count overruns the section");
    e.ids.resize(nr_ids);
    for (auto& id : e.ids) OFFWAKE_TRY(r.read(id));
    info.events.push_back(std::move(e));
  }
  return ok_status();
}

static Status decode_build_ids(ByteReader& r, FileInfo& info, bool deduplicate = false) {
  while (r.remaining() >= sizeof(perf_event_header)) {
    perf_event_header h{};
    OFFWAKE_TRY(r.read(h));
    size_t fixed = sizeof(perf_event_header) + 4 + 24;
    if (h.size < fixed || h.size - sizeof h > r.remaining())
      return Error::bad_input("build id entry of bad size " + std::to_string(h.size));
    BuildIdEntry e;
    e.cpumode = h.misc & PERF_RECORD_MISC_CPUMODE_MASK;
    OFFWAKE_TRY(r.read(e.pid));
    auto id = r.get_bytes(24);
    if (!id) return id.error();
    std::copy(id->begin(), id->begin() + 20, e.build_id.bytes.begin());
    e.build_id.size = (h.misc & kMiscBuildIdSize) ? std::min<uint8_t>((*id)[20], 20) : 20;
    auto name = r.get_fixed_string(h.size - fixed);
    if (!name) return name.error();
    e.filename = *name;
    if (deduplicate) add_build_id(e, info);
    else info.build_ids.push_back(std::move(e));
  }
  return ok_status();
}

void add_build_id(const BuildIdEntry& entry, FileInfo& info) {
  if (entry.build_id.empty()) return;
  const bool known = std::any_of(info.build_ids.begin(), info.build_ids.end(), [&](const BuildIdEntry& e) {
    return e.filename == entry.filename && e.build_id == entry.build_id;
  });
  if (!known) info.build_ids.push_back(entry);
}

Status decode_build_id_records(std::span<const uint8_t> records, FileInfo& info) {
  ByteReader r(records, "build id record");
  auto s = decode_build_ids(r, info, true);
  return s ? s : Status(s.error().context("build ids"));
}

uint64_t recorded_span(const FileInfo& info) {
  if (info.last_sample_time > info.first_sample_time) return info.last_sample_time - info.first_sample_time;
  if (info.last_record_time > info.first_record_time) return info.last_record_time - info.first_record_time;
  return 0;
}

Status decode_feature(int feature, std::span<const uint8_t> section, FileInfo& info) {
  ByteReader r(section, "feature " + std::to_string(feature));
  info.features.push_back(feature);
  HostInfo& h = info.host;
  switch (feature) {
    case kFeatHostname: return decode_string(r, h.hostname);
    case kFeatOsRelease: return decode_string(r, h.os_release);
    case kFeatVersion: return decode_string(r, h.version);
    case kFeatArch: return decode_string(r, h.arch);
    case kFeatCpuDesc: return decode_string(r, h.cpu_desc);
    case kFeatCpuId: return decode_string(r, h.cpu_id);
    case kFeatNrCpus:
      OFFWAKE_TRY(r.read(h.nr_cpus_available));
      return r.read(h.nr_cpus_online);
    case kFeatTotalMem: return r.read(h.total_mem_kb);
    case kFeatCmdline: {
      uint32_t nr = 0;
      OFFWAKE_TRY(r.read(nr));
      if (nr > r.remaining() / 4) return Error::bad_input("cmdline: count overruns the section");
      h.cmdline.resize(nr);
      for (auto& arg : h.cmdline) OFFWAKE_TRY(decode_string(r, arg));
      return ok_status();
    }
    case kFeatEventDesc: {
      auto s = decode_event_desc(r, info);
      return s ? s : Status(s.error().context("event desc"));
    }
    case kFeatBuildId: {
      auto s = decode_build_ids(r, info);
      return s ? s : Status(s.error().context("build ids"));
    }
    case kFeatSampleTime:
      OFFWAKE_TRY(r.read(info.first_sample_time));
      return r.read(info.last_sample_time);
    default:
      info.other_sections[feature].assign(section.begin(), section.end());
      return ok_status();
  }
}

}  // namespace offwake::perfdata
