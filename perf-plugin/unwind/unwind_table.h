// The unwind table of one ELF file, built from its .eh_frame and .debug_frame: the rows of
// unwind_row.h, sorted by address, one table per file whatever maps it (keyed by build id).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "perfdata/records.h"
#include "unwind_row.h"
#include "util/result.h"

namespace offwake::unwind {

struct UnwindStats {
  uint64_t fdes_eh_frame = 0;      // FDEs read from .eh_frame
  uint64_t fdes_debug_frame = 0;   // ... from .debug_frame (where .eh_frame says nothing)
  uint64_t fdes_unreadable = 0;    // malformed, or a pointer encoding not read
  uint64_t fdes_outside_code = 0;  // ranges outside every executable segment (discarded code)
  uint64_t fdes_overlapping = 0;   // cut short where a later FDE starts
  // After merging: rows of each kind, and the bytes of code they cover.
  std::array<uint64_t, OFFWAKE_UNWIND_KINDS> rows_by_kind{};
  std::array<uint64_t, OFFWAKE_UNWIND_KINDS> code_bytes_by_kind{};
  std::map<std::string, uint64_t> rows_by_reason;  // EXPRESSION and UNSUPPORTED rows, by cause
};

// An executable PT_LOAD segment: where the file holds it and where it goes in memory.
struct CodeSegment {
  uint64_t offset = 0, vaddr = 0, filesz = 0;
};

struct UnwindTable {
  std::string path;
  perfdata::BuildId build_id;
  uint64_t base = 0;  // virtual address that the rows' pc count from: the first executable byte
  std::vector<offwake_unwind_row> rows;
  std::vector<std::string> sources;  // the sections read: ".eh_frame", ".debug_frame"
  std::string empty_reason;          // why there are no rows, when there are none
  UnwindStats stats;

  std::vector<CodeSegment> segments;  // executable PT_LOAD segments, by address

  size_t bytes() const { return rows.size() * sizeof(offwake_unwind_row); }
  // For a mapping of the file at `start` from file offset `pgoff`: the bias that makes
  // pc - bias a row pc (unwind_row.h), or nullopt if no executable segment is there.
  std::optional<uint64_t> bias(uint64_t start, uint64_t pgoff) const;
  // The packed rule at a virtual address of the file (OFFWAKE_UNWIND_NONE where no row is):
  // the same search as the BPF walker's.
  uint32_t rule_at(uint64_t vaddr) const;
};

// Errors for what is not a readable x86-64 ELF file; an ELF file without any CFI gives an
// empty table with empty_reason set.
Result<UnwindTable> build_unwind_table(const std::string& path);

}  // namespace offwake::unwind
