// The perf.data records this project writes and reads, as plain values.
#pragma once

#include <linux/perf_event.h>

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "callchain/callchain.h"
#include "callchain/user_stack.h"

namespace offwake::perfdata {

// The sample_id layout every event of our files shares (non-sample records carry one trailer).
constexpr uint64_t kSampleIdLayout =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;


// One event of the file: its attr, the name perf shows, and the sample ids that select it.
struct EventDesc {
  perf_event_attr attr{};
  std::string name;
  std::vector<uint64_t> ids;
};

// The sample_id trailer of non-sample records (present when attr.sample_id_all is set).
struct SampleId {
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  bool operator==(const SampleId&) const = default;
};

struct SampleRecord {
  uint16_t misc = 0;  // cpumode; 0 means "derive from the callchain's leaf"
  uint64_t id = 0;    // PERF_SAMPLE_IDENTIFIER and PERF_SAMPLE_ID
  uint64_t ip = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;
  Callchain callchain;
  std::vector<uint8_t> raw;  // PERF_SAMPLE_RAW payload (padded on write so the size is u64-aligned)
  // PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER (regs_mask is the event's
  // sample_regs_user), as perf record --call-graph dwarf takes them.
  UserStackDump user_stack;
  uint64_t data_src = 0;  // PERF_SAMPLE_DATA_SRC (perf record --call-graph dwarf asks for it)
  // PERF_SAMPLE_CGROUP: the cgroup v2 id of the sampled task (of the blocked thread in an
  // offwake-time sample, of the waker in an offwake-waker one); 0: none. Its path is in a
  // CgroupRecord with that id.
  uint64_t cgroup = 0;
  bool operator==(const SampleRecord&) const = default;
};

struct BuildId {
  std::array<uint8_t, 20> bytes{};
  uint8_t size = 0;  // 0: none
  bool empty() const { return size == 0; }
  std::string hex() const;
  bool operator==(const BuildId&) const = default;
};

struct CommRecord {
  uint32_t pid = 0, tid = 0;
  std::string comm;
  bool exec = false;  // PERF_RECORD_MISC_COMM_EXEC
  SampleId sample_id;
  bool operator==(const CommRecord&) const = default;
};

struct Mmap2Record {
  uint16_t cpumode = PERF_RECORD_MISC_USER;
  uint32_t pid = 0, tid = 0;
  uint64_t start = 0, len = 0, pgoff = 0;
  BuildId build_id;  // when set, written instead of maj/min/ino (PERF_RECORD_MISC_MMAP_BUILD_ID)
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0, ino_generation = 0;
  uint32_t prot = 0, flags = 0;
  std::string filename;
  SampleId sample_id;
  bool operator==(const Mmap2Record&) const = default;
};

// PERF_RECORD_FORK and PERF_RECORD_EXIT share a layout.
struct TaskRecord {
  bool exit = false;
  uint32_t pid = 0, ppid = 0, tid = 0, ptid = 0;
  uint64_t time = 0;
  SampleId sample_id;
  bool operator==(const TaskRecord&) const = default;
};

struct LostRecord {
  uint64_t id = 0, lost = 0;
  SampleId sample_id;
  bool operator==(const LostRecord&) const = default;
};

struct LostSamplesRecord {
  uint64_t lost = 0;
  uint16_t misc = 0;
  SampleId sample_id;
  bool operator==(const LostSamplesRecord&) const = default;
};

// PERF_RECORD_CGROUP: a cgroup's id (its kernfs id, as PERF_SAMPLE_CGROUP and
// bpf_get_current_cgroup_id() give it) and its path below the cgroup2 mount point ("/" for
// the root, "/system.slice/foo.service").
struct CgroupRecord {
  uint64_t id = 0;
  std::string path;
  SampleId sample_id;
  bool operator==(const CgroupRecord&) const = default;
};

// PERF_RECORD_NAMESPACES: a thread's namespaces, each as the device and inode of its
// /proc/PID/ns file, in the kernel's order (net, uts, ipc, pid, user, mnt, cgroup: the
// NET_NS_INDEX ... enum of linux/perf_event.h).
struct NamespaceLink {
  uint64_t dev = 0, ino = 0;
  bool operator==(const NamespaceLink&) const = default;
};
struct NamespacesRecord {
  uint32_t pid = 0, tid = 0;
  std::vector<NamespaceLink> namespaces;
  SampleId sample_id;
  bool operator==(const NamespacesRecord&) const = default;
};

struct FinishedRoundRecord {
  bool operator==(const FinishedRoundRecord&) const = default;
};
struct FinishedInitRecord {
  bool operator==(const FinishedInitRecord&) const = default;
};

// A record the reader does not interpret; kept so that callers can count or skip it.
struct OtherRecord {
  uint32_t type = 0;
  uint16_t misc = 0;
  std::vector<uint8_t> payload;
  bool operator==(const OtherRecord&) const = default;
};

using Record = std::variant<SampleRecord, CommRecord, Mmap2Record, TaskRecord, LostRecord,
                            LostSamplesRecord, CgroupRecord, NamespacesRecord, FinishedRoundRecord,
                            FinishedInitRecord, OtherRecord>;

}  // namespace offwake::perfdata
