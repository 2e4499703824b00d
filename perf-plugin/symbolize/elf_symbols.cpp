#include "symbolize/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "synth/elf_file.h"
#include "unwind/cfi_entries.h"

namespace offwake::symbolize {
namespace {

struct Load {
  uint64_t vaddr, memsz, offset;
};

std::vector<Load> load_segments(Elf* elf) {
  std::vector<Load> out;
  size_t n = 0;
  if (elf_getphdrnum(elf, &n) != 0) return out;
  for (size_t i = 0; i < n; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
      out.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset});
  }
  return out;
}

// `vaddr` in the file-offset space that MMAP2 pgoff speaks, through the segment holding it.
std::optional<uint64_t> file_offset(const std::vector<Load>& loads, uint64_t vaddr) {
  for (const Load& l : loads)
    if (vaddr >= l.vaddr && vaddr < l.vaddr + l.memsz) return vaddr - l.vaddr + l.offset;
  return std::nullopt;
}

bool wanted(const GElf_Sym& sym, bool text_section) {
  if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE) return false;
  switch (GELF_ST_TYPE(sym.st_info)) {
    case STT_FUNC:
    case STT_GNU_IFUNC:
    case STT_OBJECT:
      return true;
    case STT_NOTYPE:  // a label, counted only in code
      return text_section;
    default:
      return false;
  }
}

}  // namespace

Result<ElfSymbolFile> ElfSymbolFile::open(const std::string& path) {
  auto handle = ElfHandle::open(path);
  if (!handle) return handle.error();
  ElfSymbolFile f;
  f.path_ = path;
  f.handle_ = std::move(handle).value();
  auto s = f.scan();
  if (!s) return s.error().context(path);
  return f;
}

Status ElfSymbolFile::scan() {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf(), &shstrndx) != 0) return Error::bad_input("no section name table");
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    // A debug file keeps stripped sections as NOBITS: they hold nothing.
    if (sh.sh_type == SHT_SYMTAB) has_symtab_ = true;
    if (sh.sh_type == SHT_DYNSYM) has_dynsym_ = true;
    if (sh.sh_type == SHT_NOTE && build_id_.empty()) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      if (d && d->d_buf) build_id_ = parse_build_id_note(static_cast<const uint8_t*>(d->d_buf), d->d_size);
    }
    const char* name = elf_strptr(elf(), shstrndx, sh.sh_name);
    if (name && std::strcmp(name, ".gnu_debuglink") == 0 && sh.sh_type == SHT_PROGBITS) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      if (d && d->d_buf && d->d_size > 0)
        debuglink_.assign(static_cast<const char*>(d->d_buf), strnlen(static_cast<const char*>(d->d_buf), d->d_size));
    }
  }
  return ok_status();
}

void ElfSymbolFile::load_symbols(SymbolTable& table, bool demangle_names, const ElfSymbolFile& layout) const {
  Elf* elf = this->elf();
  const uint32_t type = has_symtab_ ? SHT_SYMTAB : SHT_DYNSYM;
  std::vector<Load> loads = load_segments(layout.elf());
  size_t shstrndx = 0;
  elf_getshdrstrndx(elf, &shstrndx);
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || sh.sh_entsize == 0) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (!d) continue;
    const size_t n = sh.sh_size / sh.sh_entsize;
    std::vector<int8_t> text(1, 0);  // per section index: -1 not text, 1 text, 0 unknown yet
    for (size_t i = 0; i < n; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(d, static_cast<int>(i), &sym)) continue;
      bool in_text = false;
      if (GELF_ST_TYPE(sym.st_info) == STT_NOTYPE && sym.st_shndx != SHN_UNDEF && sym.st_shndx < SHN_LORESERVE) {
        if (text.size() <= sym.st_shndx) text.resize(sym.st_shndx + 1, 0);
        int8_t& t = text[sym.st_shndx];
        if (t == 0) {
          GElf_Shdr ssh;
          Elf_Scn* s = elf_getscn(elf, sym.st_shndx);
          const char* sname = s && gelf_getshdr(s, &ssh) ? elf_strptr(elf, shstrndx, ssh.sh_name) : nullptr;
          t = sname && std::strstr(sname, "text") ? 1 : -1;
        }
        in_text = t == 1;
      }
      if (!wanted(sym, in_text)) continue;
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (!name) continue;
      uint64_t start;
      if (auto off = file_offset(loads, sym.st_value)) {
        start = *off;
      } else {
        // Past every segment (an end marker like _etext): through its section instead.
        GElf_Shdr ssh;
        Elf_Scn* s = elf_getscn(layout.elf(), sym.st_shndx);
        if (!s || !gelf_getshdr(s, &ssh)) continue;
        start = sym.st_value - ssh.sh_addr + ssh.sh_offset;
      }
      table.add(demangle_names ? demangle(name) : std::string(name), start, sym.st_size,
                static_cast<uint8_t>(GELF_ST_BIND(sym.st_info)));
    }
  }
}

std::vector<Symbol> ElfSymbolFile::plt_symbols() const {
  std::vector<Symbol> out;
  Elf* elf = this->elf();
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return out;
  GElf_Shdr plt{}, plt_sec{}, rel{};
  Elf_Scn* rel_scn = nullptr;
  bool have_plt = false, have_sec = false;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!name) continue;
    if (std::strcmp(name, ".plt") == 0) plt = sh, have_plt = true;
    if (std::strcmp(name, ".plt.sec") == 0) plt_sec = sh, have_sec = true;
    if ((std::strcmp(name, ".rela.plt") == 0 && sh.sh_type == SHT_RELA) ||
        (std::strcmp(name, ".rel.plt") == 0 && sh.sh_type == SHT_REL))
      rel = sh, rel_scn = scn;
  }
  if (!rel_scn || (!have_plt && !have_sec) || rel.sh_entsize == 0) return out;
  // With .plt.sec (IBT), the entries callers jump to are there, without a header.
  const GElf_Shdr& entries = have_sec ? plt_sec : plt;
  const uint64_t entry_size = entries.sh_entsize ? entries.sh_entsize : 16;
  uint64_t at = entries.sh_offset + (have_sec ? 0 : entry_size);
  Elf_Scn* dynsym = elf_getscn(elf, rel.sh_link);
  GElf_Shdr dynsym_sh;
  Elf_Data* rel_data = elf_getdata(rel_scn, nullptr);
  Elf_Data* sym_data = dynsym ? elf_getdata(dynsym, nullptr) : nullptr;
  if (!rel_data || !sym_data || !gelf_getshdr(dynsym, &dynsym_sh)) return out;
  const size_t n = rel.sh_size / rel.sh_entsize;
  for (size_t i = 0; i < n; ++i, at += entry_size) {
    uint64_t info;
    if (rel.sh_type == SHT_RELA) {
      GElf_Rela r;
      if (!gelf_getrela(rel_data, static_cast<int>(i), &r)) continue;
      info = r.r_info;
    } else {
      GElf_Rel r;
      if (!gelf_getrel(rel_data, static_cast<int>(i), &r)) continue;
      info = r.r_info;
    }
    GElf_Sym sym;
    if (!gelf_getsym(sym_data, static_cast<int>(GELF_R_SYM(info)), &sym)) continue;
    const char* name = elf_strptr(elf, dynsym_sh.sh_link, sym.st_name);
    if (!name) continue;
    out.push_back(Symbol{demangle(name) + "@plt", at, at + entry_size, STB_GLOBAL});
  }
  return out;
}

void ElfSymbolFile::load_unnamed_functions(SymbolTable& table, const std::string& label) const {
  auto ranges = unwind::function_ranges(elf());
  if (!ranges) return;  // unreadable CFI: those frames stay unnamed
  const std::vector<Load> loads = load_segments(elf());
  char hex[24];
  for (const unwind::PcRange& r : *ranges) {
    auto start = file_offset(loads, r.start);
    if (!start) continue;
    std::snprintf(hex, sizeof(hex), "%" PRIx64, r.start);
    table.add("[" + label + "+0x" + hex + "]", *start, r.end - r.start, STB_LOCAL);
  }
  table.finish(false);
}

}  // namespace offwake::symbolize
