#include "unwind/mapped_files.h"

#include "synth/elf_file.h"

namespace offwake::unwind {

std::optional<uint64_t> MappedFile::bias(const Mapping& m) const {
  if (!position_independent) return 0;  // ET_EXEC: at its own addresses
  // The segment whose pages the mapping starts at: file offset o is at m.start + (o - pgoff),
  // and the segment puts o at vaddr + (o - offset).
  constexpr uint64_t kPage = 4096;
  for (const Load& l : loads) {
    if (m.pgoff >= (l.offset & ~(kPage - 1)) && m.pgoff < l.offset + l.memsz)
      return m.start - m.pgoff + l.offset - l.vaddr;
  }
  return std::nullopt;
}

const MappedFile& MappedFiles::get(const std::string& path) {
  auto [it, added] = files_.try_emplace(path);
  if (!added) return it->second;
  MappedFile& f = it->second;
  auto elf = ElfFile::open(path);
  if (!elf) {
    f.error = elf.error().message();
    return f;
  }
  f.position_independent = elf->position_independent();
  f.build_id = elf->build_id();
  for (const ElfSegment& s : elf->segments()) f.loads.push_back({s.vaddr, s.offset, s.memsz});
  if (f.loads.empty()) f.error = path + ": no load segments";
  return f;
}

}  // namespace offwake::unwind
