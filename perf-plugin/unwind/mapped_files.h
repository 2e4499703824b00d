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

class MappedFiles {
 public:
  const MappedFile& get(const std::string& path);

 private:
  std::map<std::string, MappedFile> files_;
};

}  // namespace offwake::unwind
