// Feature sections (HEADER_*) of perf.data: what the machine was, what ran, which events,
// which binaries by build id. Each section has one encoder and one decoder.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "perfdata/bytes.h"
#include "perfdata/records.h"

namespace offwake::perfdata {

struct HostInfo {
  std::string hostname, os_release, version, arch, cpu_desc, cpu_id;
  uint32_t nr_cpus_available = 0, nr_cpus_online = 0;
  uint64_t total_mem_kb = 0;
  std::vector<std::string> cmdline;
  bool operator==(const HostInfo&) const = default;
};

// One entry of HEADER_BUILD_ID. pid -1 is the host machine, as perf writes it.
struct BuildIdEntry {
  int32_t pid = -1;
  uint16_t cpumode = PERF_RECORD_MISC_USER;
  BuildId build_id;
  std::string filename;
  bool operator==(const BuildIdEntry&) const = default;
};

// Everything the feature sections say, decoded.
struct FileInfo {
  HostInfo host;
  std::vector<EventDesc> events;  // from HEADER_EVENT_DESC
  std::vector<BuildIdEntry> build_ids;
  uint64_t first_sample_time = 0, last_sample_time = 0;
  // A stream has no HEADER_SAMPLE_TIME (a file writes it at its end): the first and last
  // timestamps of the records it carried (samples, and the sample_id of the others; 0: none).
  uint64_t first_record_time = 0, last_record_time = 0;
  std::vector<int> features;  // the feature bits present
  std::map<int, Bytes> other_sections;  // sections of features this reader does not decode
};

// The time a recording spans, when it does not say how long it lasted (perf offwake record's
// duration_ns): from its first sample to its last (HEADER_SAMPLE_TIME), or in a stream, which
// has no such section, from the first timestamped record to the last. 0 if unknown.
uint64_t recorded_span(const FileInfo& info);

// Feature bit -> section bytes, in bit order (the order sections are laid out in a file).
using FeatureSections = std::map<int, Bytes>;

FeatureSections encode_host_features(const HostInfo& host);
Bytes encode_event_desc(std::span<const EventDesc> events);
Bytes encode_build_ids(std::span<const BuildIdEntry> entries);
Bytes encode_sample_time(uint64_t first, uint64_t last);

// Decodes one section into `info`; unknown features are recorded and skipped.
Status decode_feature(int feature, std::span<const uint8_t> section, FileInfo& info);

// A build id that a stream carries outside its HEADER_BUILD_ID section (a HEADER_BUILD_ID
// record, an MMAP2 record with a build id): added to `info` unless it has it already.
void add_build_id(const BuildIdEntry& entry, FileInfo& info);
// HEADER_BUILD_ID records, as in the section, each added with add_build_id().
Status decode_build_id_records(std::span<const uint8_t> records, FileInfo& info);

}  // namespace offwake::perfdata
