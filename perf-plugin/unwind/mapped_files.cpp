#include "unwind/mapped_files.h"

#include "synth/elf_file.h"
#include "unwind/load_bias.h"

namespace offwake::unwind {

std::optional<uint64_t> MappedFile::bias(const RecordedMapping& m) const {
  if (!position_independent) return 0;  // ET_EXEC: at its own addresses
  for (const Load& l : loads)
    if (auto bias = segment_load_bias(m.start, m.pgoff, l.offset, l.vaddr, l.memsz)) return bias;
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
