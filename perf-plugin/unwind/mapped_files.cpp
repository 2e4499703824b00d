#include "unwind/mapped_files.h"

#include <sys/stat.h>

#include <cstdio>

#include "synth/elf_file.h"
#include "unwind/load_bias.h"

namespace offwake::unwind {

std::optional<uint64_t> MappedFile::bias(const RecordedMapping& m) const {
  if (!position_independent) return 0;  // ET_EXEC: at its own addresses
  for (const Load& l : loads)
    if (auto bias = segment_load_bias(m.start, m.pgoff, l.offset, l.vaddr, l.memsz)) return bias;
  return std::nullopt;
}

std::string live_file_path(uint32_t pid, const std::string& path, uint64_t start, uint64_t end) {
  const std::string proc = "/proc/" + std::to_string(pid);
  struct stat st;
  const bool unnamed = path.starts_with("/memfd:") || path.ends_with(" (deleted)");
  if (!unnamed && stat((proc + "/root" + path).c_str(), &st) == 0) return proc + "/root" + path;
  char range[64];
  snprintf(range, sizeof range, "/map_files/%llx-%llx", static_cast<unsigned long long>(start),
           static_cast<unsigned long long>(end));
  if (stat((proc + range).c_str(), &st) == 0) return proc + range;
  return path;
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
