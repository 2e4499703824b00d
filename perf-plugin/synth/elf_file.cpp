#include "synth/elf_file.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <cstring>

namespace offwake {

perfdata::BuildId parse_build_id_note(const uint8_t* data, size_t size) {
  constexpr uint32_t kNtGnuBuildId = 3;
  perfdata::BuildId id;
  size_t pos = 0;
  while (pos + 12 <= size) {
    uint32_t namesz, descsz, type;
    std::memcpy(&namesz, data + pos, 4);
    std::memcpy(&descsz, data + pos + 4, 4);
    std::memcpy(&type, data + pos + 8, 4);
    pos += 12;
    size_t name_at = pos;
    pos += (namesz + 3) & ~size_t{3};
    size_t desc_at = pos;
    pos += (descsz + 3) & ~size_t{3};
    if (pos > size) break;
    if (type == kNtGnuBuildId && namesz == 4 && std::memcmp(data + name_at, "GNU", 4) == 0) {
      id.size = static_cast<uint8_t>(std::min<size_t>(descsz, id.bytes.size()));
      std::memcpy(id.bytes.data(), data + desc_at, id.size);
      return id;
    }
  }
  return id;
}

Result<ElfFile> ElfFile::open(const std::string& path) {
  auto handle = ElfHandle::open(path);
  if (!handle) return handle.error();
  ElfFile f;
  f.path_ = path;
  f.handle_ = std::move(handle).value();
  auto s = f.load();
  if (!s) return s.error().context(path);
  return f;
}

Status ElfFile::load() {
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf(), &eh)) return Error::bad_input(std::string("ELF header: ") + elf_errmsg(-1));
  pie_ = eh.e_type == ET_DYN;
  size_t nphdr = 0;
  if (elf_getphdrnum(elf(), &nphdr) != 0) return Error::bad_input("ELF program headers unreadable");
  for (size_t i = 0; i < nphdr; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf(), static_cast<int>(i), &ph)) continue;
    if (ph.p_type == PT_INTERP) {
      size_t size = 0;
      const char* raw = elf_rawfile(elf(), &size);
      if (raw && ph.p_offset < size && ph.p_filesz <= size - ph.p_offset)
        interpreter_.assign(raw + ph.p_offset, strnlen(raw + ph.p_offset, ph.p_filesz));
    }
    if (ph.p_type != PT_LOAD) continue;
    segments_.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, (ph.p_flags & PF_X) != 0});
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (!d || !d->d_buf) continue;
    auto id = parse_build_id_note(static_cast<const uint8_t*>(d->d_buf), d->d_size);
    if (!id.empty()) {
      build_id_ = id;
      break;
    }
  }
  return ok_status();
}

std::vector<std::string> ElfFile::needed() const {
  std::vector<std::string> out;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || sh.sh_entsize == 0) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (!d) continue;
    for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Dyn dyn;
      if (!gelf_getdyn(d, static_cast<int>(i), &dyn) || dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag != DT_NEEDED) continue;
      if (const char* name = elf_strptr(elf(), sh.sh_link, dyn.d_un.d_val)) out.emplace_back(name);
    }
  }
  return out;
}

std::optional<ElfSymbol> ElfFile::find_function(const std::string& name) const {
  for (uint32_t table : {SHT_SYMTAB, SHT_DYNSYM}) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf(), scn)) != nullptr) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || sh.sh_type != table || sh.sh_entsize == 0) continue;
      Elf_Data* d = elf_getdata(scn, nullptr);
      if (!d) continue;
      size_t n = sh.sh_size / sh.sh_entsize;
      for (size_t i = 0; i < n; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(d, static_cast<int>(i), &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC) continue;
        const char* s = elf_strptr(elf(), sh.sh_link, sym.st_name);
        if (s && name == s && sym.st_value) return ElfSymbol{name, sym.st_value, sym.st_size};
      }
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::file_offset_of(uint64_t vaddr) const {
  for (const auto& seg : segments_) {
    if (vaddr >= seg.vaddr && vaddr < seg.vaddr + seg.memsz) return vaddr - seg.vaddr + seg.offset;
  }
  return std::nullopt;
}

}  // namespace offwake
