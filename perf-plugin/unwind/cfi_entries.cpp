#include "unwind/cfi_entries.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace offwake::unwind {
namespace {

// Reads one value in DW_EH_PE encoding `enc` at [p, end); advances p. `field_addr` is the
// value's own virtual address, for pc-relative values. nullopt for an encoding not read here:
// x86-64 toolchains write pcrel|sdata4 in .eh_frame and absolute pointers in .debug_frame;
// datarel/textrel/funcrel/indirect need addresses this reader does not have.
std::optional<uint64_t> read_encoded(const uint8_t*& p, const uint8_t* end, uint8_t enc,
                                     uint64_t field_addr, bool apply) {
  auto fixed = [&](size_t n, bool is_signed) -> std::optional<uint64_t> {
    if (static_cast<size_t>(end - p) < n) return std::nullopt;
    uint64_t v = 0;
    std::memcpy(&v, p, n);  // x86-64 only: little-endian, as the file
    if (is_signed && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
    p += n;
    return v;
  };
  auto leb = [&](bool is_signed) -> std::optional<uint64_t> {
    uint64_t v = 0;
    unsigned shift = 0;
    while (p < end && shift < 64) {
      uint8_t b = *p++;
      v |= uint64_t{b & 0x7fu} << shift;
      shift += 7;
      if (!(b & 0x80)) {
        if (is_signed && shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;
        return v;
      }
    }
    return std::nullopt;
  };
  std::optional<uint64_t> v;
  switch (enc & 0x0f) {
    case DW_EH_PE_absptr: v = fixed(8, false); break;
    case DW_EH_PE_uleb128: v = leb(false); break;
    case DW_EH_PE_udata2: v = fixed(2, false); break;
    case DW_EH_PE_udata4: v = fixed(4, false); break;
    case DW_EH_PE_udata8: v = fixed(8, false); break;
    case DW_EH_PE_sleb128: v = leb(true); break;
    case DW_EH_PE_sdata2: v = fixed(2, true); break;
    case DW_EH_PE_sdata4: v = fixed(4, true); break;
    case DW_EH_PE_sdata8: v = fixed(8, true); break;
    default: return std::nullopt;
  }
  if (!v || !apply) return v;
  switch (enc & 0x70) {
    case DW_EH_PE_absptr: return v;
    case DW_EH_PE_pcrel: return *v + field_addr;
    default: return std::nullopt;
  }
}

// The encoding of the pc fields of the FDEs under a CIE: 'R' in a "z" augmentation, or
// absolute pointers. nullopt when the augmentation string is not understood.
std::optional<uint8_t> fde_encoding(const Dwarf_CIE& cie, bool eh_frame) {
  // .debug_frame: address-sized absolute pointers, 8 bytes on x86-64.
  if (!eh_frame || cie.augmentation == nullptr || cie.augmentation[0] == '\0') return DW_EH_PE_absptr;
  if (cie.augmentation[0] != 'z') return std::nullopt;
  const uint8_t* p = cie.augmentation_data;
  const uint8_t* end = p + cie.augmentation_data_size;
  for (const char* a = cie.augmentation + 1; *a; ++a) {
    switch (*a) {
      case 'R':
        if (p >= end) return std::nullopt;
        return *p;
      case 'L':
        if (p++ >= end) return std::nullopt;
        break;
      case 'P': {
        if (p >= end) return std::nullopt;
        uint8_t penc = *p++;
        // The personality pointer is only skipped: any application will do for its length.
        if (!read_encoded(p, end, penc & 0x0f, 0, false)) return std::nullopt;
        break;
      }
      case 'S':
      case 'B':
        break;
      default:
        return std::nullopt;
    }
  }
  return DW_EH_PE_absptr;
}

}  // namespace

Result<CfiEntries> read_cfi_entries(Elf* elf, Elf_Scn* section, bool eh_frame) {
  GElf_Shdr shdr;
  if (gelf_getshdr(section, &shdr) == nullptr) return Error("reading a CFI section header");
  Elf_Data* data = elf_getdata(section, nullptr);
  if (data == nullptr || data->d_buf == nullptr)
    return Error(std::string("reading the CFI section: ") + elf_errmsg(-1));
  const auto* ident = reinterpret_cast<const unsigned char*>(elf_getident(elf, nullptr));
  if (ident == nullptr) return Error("reading the ELF identification");
  const auto* buf = static_cast<const uint8_t*>(data->d_buf);

  CfiEntries out;
  std::map<Dwarf_Off, std::optional<uint8_t>> encodings;  // by CIE offset
  auto encoding_of = [&](Dwarf_Off cie_offset) -> std::optional<uint8_t> {
    auto it = encodings.find(cie_offset);
    if (it != encodings.end()) return it->second;
    // A CIE after its FDEs: read it where the FDE says it is.
    Dwarf_Off next;
    Dwarf_CFI_Entry cie;
    std::optional<uint8_t> enc;
    if (dwarf_next_cfi(ident, data, eh_frame, cie_offset, &next, &cie) == 0 && dwarf_cfi_cie_p(&cie))
      enc = fde_encoding(cie.cie, eh_frame);
    encodings[cie_offset] = enc;
    return enc;
  };

  Dwarf_Off offset = 0, next = 0;
  for (;;) {
    Dwarf_CFI_Entry entry;
    int rc = dwarf_next_cfi(ident, data, eh_frame, offset, &next, &entry);
    if (rc == 1) break;  // the end, or .eh_frame's zero terminator
    if (rc != 0) {
      ++out.unreadable;
      // libdw moves `next` past an entry whose length it could read; otherwise nothing after
      // this point can be trusted.
      if (next == static_cast<Dwarf_Off>(-1) || next <= offset) break;
      offset = next;
      continue;
    }
    if (dwarf_cfi_cie_p(&entry)) {
      encodings[offset] = fde_encoding(entry.cie, eh_frame);
    } else {
      std::optional<uint8_t> enc = encoding_of(entry.fde.CIE_pointer);
      const uint8_t* p = entry.fde.start;
      std::optional<uint64_t> start, length;
      if (enc) {
        uint64_t field_addr = shdr.sh_addr + static_cast<uint64_t>(p - buf);
        start = read_encoded(p, entry.fde.end, *enc, field_addr, true);
        // The length has the format of the start but is never relative to anything.
        if (start) length = read_encoded(p, entry.fde.end, *enc & 0x0f, 0, false);
      }
      if (!length) {
        ++out.unreadable;
      } else if (*length != 0 && *start + *length > *start) {
        out.fdes.push_back({*start, *start + *length});
      }
    }
    if (next == static_cast<Dwarf_Off>(-1) || next <= offset) break;
    offset = next;
  }
  return out;
}

CfiSection cfi_section(const char* name, uint32_t sh_type) {
  constexpr uint32_t kShtX8664Unwind = 0x70000001;
  if (name == nullptr) return CfiSection::none;
  if (std::strcmp(name, ".eh_frame") == 0 && (sh_type == SHT_PROGBITS || sh_type == kShtX8664Unwind))
    return CfiSection::eh_frame;
  if (std::strcmp(name, ".debug_frame") == 0 && sh_type == SHT_PROGBITS) return CfiSection::debug_frame;
  return CfiSection::none;
}

Result<std::vector<PcRange>> function_ranges(Elf* elf) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return Error("section names unreadable");
  Elf_Scn *eh_frame = nullptr, *debug_frame = nullptr, *scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    switch (cfi_section(elf_strptr(elf, shstrndx, sh.sh_name), sh.sh_type)) {
      case CfiSection::eh_frame: eh_frame = scn; break;
      case CfiSection::debug_frame: debug_frame = scn; break;
      case CfiSection::none: break;
    }
  }
  std::vector<PcRange> out;
  if (!eh_frame && !debug_frame) return out;
  auto entries = read_cfi_entries(elf, eh_frame ? eh_frame : debug_frame, eh_frame != nullptr);
  if (!entries) return entries.error();
  out = std::move(entries->fdes);
  std::sort(out.begin(), out.end(), [](const PcRange& a, const PcRange& b) { return a.start < b.start; });
  return out;
}

}  // namespace offwake::unwind
