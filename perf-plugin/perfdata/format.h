// On-disk layout of perf.data, from tools/perf/Documentation/perf.data-file-format.txt and
// include/uapi/linux/perf_event.h. Native endian, 8-byte aligned records.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>

namespace offwake::perfdata {

constexpr uint64_t kMagic = 0x32454c4946524550ULL;  // "PERFILE2" read as a little-endian u64

// Attrs are written at the size perf 6.1 knows (PERF_ATTR_SIZE_VER7), so old and new perf
// both read our files; a larger size makes perf 6.1 refuse the file.
constexpr uint32_t kAttrSize = 128;
static_assert(sizeof(perf_event_attr) >= kAttrSize);

struct FileSection {
  uint64_t offset;
  uint64_t size;
};

struct FileHeader {
  uint64_t magic;
  uint64_t size;       // sizeof(FileHeader)
  uint64_t attr_size;  // kAttrSize + sizeof(FileSection)
  FileSection attrs;
  FileSection data;
  FileSection event_types;  // unused, zero
  uint64_t features[4];     // 256-bit feature bitmap
};
static_assert(sizeof(FileHeader) == 104);

struct PipeHeader {
  uint64_t magic;
  uint64_t size;  // sizeof(PipeHeader)
};

// Feature bits (HEADER_*); the section of each set bit follows the data section.
enum Feature : int {
  kFeatTracingData = 1,
  kFeatBuildId = 2,
  kFeatHostname = 3,
  kFeatOsRelease = 4,
  kFeatVersion = 5,
  kFeatArch = 6,
  kFeatNrCpus = 7,
  kFeatCpuDesc = 8,
  kFeatCpuId = 9,
  kFeatTotalMem = 10,
  kFeatCmdline = 11,
  kFeatEventDesc = 12,
  kFeatSampleTime = 21,
  kFeatClockId = 23,
  kFeatClockData = 29,
  kFeatBits = 256,
};

// Records perf's tools add to the kernel's (enum perf_user_event_type).
enum UserRecordType : uint32_t {
  kRecordUserTypeStart = 64,  // PERF_RECORD_USER_TYPE_START: every type from here is perf's
  kRecordHeaderAttr = 64,
  kRecordHeaderTracingData = 66,  // a stream's HEADER_TRACING_DATA; the data follows the record
  kRecordHeaderBuildId = 67,
  kRecordFinishedRound = 68,
  kRecordThreadMap = 73,  // whom perf record followed (struct perf_record_thread_map)
  kRecordHeaderFeature = 80,
  kRecordFinishedInit = 82,
};

// misc bits that are not in older uapi headers.
constexpr uint16_t kMiscMmapBuildId = 1 << 14;  // MMAP2 carries a build id instead of dev/inode
constexpr uint16_t kMiscBuildIdSize = 1 << 15;  // build_id_event carries its size

// Strings in feature sections and build-id events are padded to this.
constexpr uint32_t kNameAlign = 64;

// The sample_type bits this implementation encodes and decodes; others are rejected.
constexpr uint64_t kSupportedSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
    PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
    PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER |
    PERF_SAMPLE_STACK_USER | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_CGROUP;

// The bits that make up the sample_id trailer of non-sample records (sample_id_all).
constexpr uint64_t kSampleIdBits = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
                                   PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
                                   PERF_SAMPLE_IDENTIFIER;

// Largest record: header.size is a u16.
constexpr size_t kMaxRecordSize = 0xffff;

constexpr uint64_t align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }
constexpr uint64_t align_to(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace offwake::perfdata
