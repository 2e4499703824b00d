// Where a mapping puts a file: the load bias (run-time address minus the file's virtual
// address) of a mapping at `start` from file offset `pgoff`. One rule for the BPF walker's
// tables (UnwindTable::bias) and the libdwfl unwinder of stack copies (MappedFile::bias).
#pragma once

#include <cstdint>
#include <optional>

namespace offwake::unwind {

// The PT_LOAD segment holding `size` bytes of the file from `offset`, placed at `vaddr`: if the
// mapping starts at one of its pages (at or below `offset`, mappings start on a page), the
// mapping's bias. File offset o is at start + (o - pgoff), and the segment puts o at
// vaddr + (o - offset).
inline std::optional<uint64_t> segment_load_bias(uint64_t start, uint64_t pgoff, uint64_t offset, uint64_t vaddr,
                                                 uint64_t size) {
  constexpr uint64_t kPage = 4096;
  if (pgoff < (offset & ~(kPage - 1)) || pgoff >= offset + size) return std::nullopt;
  return start - pgoff + offset - vaddr;
}

}  // namespace offwake::unwind
