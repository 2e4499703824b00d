// The FDEs of one CFI section (.eh_frame or .debug_frame): which address ranges it describes.
// libdw finds the rules for an address (dwarf_cfi_addrframe) but lists no FDEs, so they are
// enumerated here with dwarf_next_cfi and their pc ranges decoded from the raw bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "util/result.h"

struct Elf;
struct Elf_Scn;

namespace offwake::unwind {

struct PcRange {
  uint64_t start = 0, end = 0;  // [start, end), ELF virtual addresses
  bool operator==(const PcRange&) const = default;
};

struct CfiEntries {
  std::vector<PcRange> fdes;  // in section order, empty ranges left out
  uint64_t unreadable = 0;    // FDEs (or their CIEs) malformed, or in a pointer encoding not read
};

// Walks the whole section; an entry that cannot be read is counted and skipped where the
// section says how long it is, and ends the walk otherwise. An error only if the section's
// data cannot be had at all.
Result<CfiEntries> read_cfi_entries(Elf* elf, Elf_Scn* section, bool eh_frame);

enum class CfiSection { none, eh_frame, debug_frame };

// Whether a section (its name and sh_type) holds CFI to read: .eh_frame as PROGBITS, or typed
// SHT_X86_64_UNWIND as some linkers write it; .debug_frame as PROGBITS (NOBITS where it was
// stripped into a separate debug file: nothing there).
CfiSection cfi_section(const char* name, uint32_t sh_type);

// The functions a file's CFI describes: the FDE ranges of its .eh_frame, else of its
// .debug_frame, sorted by start. A stripped binary keeps them, where it has no symbols left
// for its static functions. Empty if the file has neither section.
Result<std::vector<PcRange>> function_ranges(Elf* elf);

}  // namespace offwake::unwind
