// What the unwinder needs of each file a process maps, read once per file: whether it can be
// read at all, its build id (checked against the recording's), and its load segments, which
// say where a mapping puts the file (its load bias).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "perfdata/records.h"
#include "unwind/recorded_mappings.h"

namespace offwake::unwind {

struct MappedFile {
  std::string error;  // why the file cannot be used; empty if it can
  bool position_independent = false;  // ET_DYN: placed where the mapping says
  perfdata::BuildId build_id;
  struct Load {
    uint64_t vaddr = 0, offset = 0, memsz = 0;
  };
  std::vector<Load> loads;

  // The load bias of `m` (run-time address minus the file's virtual address), or nullopt if
  // no load segment of the file is at the mapping's file offset.
  std::optional<uint64_t> bias(const RecordedMapping& m) const;
};

// Where to read a file that live process `pid` maps as `path` at [start, end): through the
// process's own root (its mount namespace: a container's file the host lacks) while it lives,
// or for a file with no name left (deleted, a memfd) through the mapping itself
// (/proc/PID/map_files); else the path as it is.
std::string live_file_path(uint32_t pid, const std::string& path, uint64_t start, uint64_t end);

class MappedFiles {
 public:
  const MappedFile& get(const std::string& path);

 private:
  std::map<std::string, MappedFile> files_;
};

}  // namespace offwake::unwind
