// The executable file mappings of each process over a recording, from its MMAP/MMAP2, FORK and
// COMM (exec) records in time order: where the code of a user stack's pcs is, for the libdwfl
// unwinder of stack copies (DwarfUnwinder). A live recording reads a process that existed
// before it from /proc, once, when it first needs it.
//
// Not ProcessMappings (process_mappings.h), which keeps the BPF walker's per-process table
// values during a live BPF recording: that one takes records in no order (times decide) and
// drops whole mappings; this one is fed in time order, cuts mappings down as perf does, and
// says by a generation when what was built on them is stale.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

#include "perfdata/records.h"

namespace offwake::unwind {

struct RecordedMapping {
  uint64_t start = 0, end = 0, pgoff = 0;
  std::string path;  // of the file with the code: for the vDSO, our own copy (own_vdso_file())
  perfdata::BuildId build_id;  // the recording's, when it has one
  uint64_t dev = 0, ino = 0;   // else the file's device and inode, when known
  // Where to read it, if not at `path`: a live process's file through /proc
  // (live_file_path(): another mount namespace's, a deleted file, a memfd).
  std::string open_path;
};

class RecordedMappings {
 public:
  // `read_proc`: a process no record described is read from /proc/PID/maps.
  explicit RecordedMappings(bool read_proc) : read_proc_(read_proc) {}

  // A mapping replaces what it overlaps (of any kind); executable file mappings are kept.
  void mmap(const perfdata::Mmap2Record& m);
  // A new process starts with its parent's mappings; one that exec'd has none left.
  void fork(uint32_t parent_pid, uint32_t child_pid);
  void exec(uint32_t pid);

  // The mapping that holds `addr` in `pid`, or nullptr.
  const RecordedMapping* find(uint32_t pid, uint64_t addr);
  // Changes whenever a mapping of `pid` goes (replaced, exec, a new process under the pid):
  // what was built on the old mappings is stale. Added mappings leave it.
  uint64_t generation(uint32_t pid);

 private:
  struct Process {
    std::map<uint64_t, RecordedMapping> by_start;
    uint64_t generation = 0;
  };
  Process& process(uint32_t pid);
  void read_proc(uint32_t pid, Process& p);
  // `m` as the record or /proc names it (`path` its name there, no open_path yet).
  void add(uint32_t pid, Process& p, RecordedMapping m);
  void remove_overlaps(Process& p, uint64_t start, uint64_t end);

  bool read_proc_;
  std::unordered_map<uint32_t, Process> processes_;
  uint64_t next_generation_ = 1;
};

}  // namespace offwake::unwind
