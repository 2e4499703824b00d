// Read-only view of an ELF file through libelf: build id, load segments, symbols.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "perfdata/records.h"
#include "util/elf_handle.h"
#include "util/result.h"

struct Elf;

namespace offwake {

struct ElfSymbol {
  std::string name;
  uint64_t value = 0;  // virtual address in the file's address space
  uint64_t size = 0;
};

struct ElfSegment {
  uint64_t vaddr = 0, memsz = 0, offset = 0;
  bool executable = false;
};

class ElfFile {
 public:
  static Result<ElfFile> open(const std::string& path);

  const std::string& path() const { return path_; }
  const perfdata::BuildId& build_id() const { return build_id_; }
  const std::vector<ElfSegment>& segments() const { return segments_; }
  bool position_independent() const { return pie_; }
  // Looks a function up by name in .symtab, then .dynsym.
  std::optional<ElfSymbol> find_function(const std::string& name) const;
  // The program interpreter (PT_INTERP, the dynamic loader), or "".
  const std::string& interpreter() const { return interpreter_; }
  // The sonames of DT_NEEDED, in order.
  std::vector<std::string> needed() const;
  // File offset of a virtual address, through the PT_LOAD segment that holds it.
  std::optional<uint64_t> file_offset_of(uint64_t vaddr) const;

 private:
  Status load();
  Elf* elf() const { return handle_.get(); }

  std::string path_;
  ElfHandle handle_;
  perfdata::BuildId build_id_;
  std::vector<ElfSegment> segments_;
  bool pie_ = false;
  std::string interpreter_;
};

// Parses an ELF note blob (as in .note.gnu.build-id or /sys/kernel/notes) for the GNU build id.
perfdata::BuildId parse_build_id_note(const uint8_t* data, size_t size);

}  // namespace offwake
