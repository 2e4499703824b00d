#include "unwind/unwind_table.h"

#include <elfutils/libdw.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "synth/elf_file.h"
#include "unwind/cfi_entries.h"
#include "unwind/frame_rule.h"
#include "unwind/load_bias.h"
#include "util/elf_handle.h"

namespace offwake::unwind {
namespace {

// libdw's handles, each released before the Elf they read (declared after it).
struct CfiEnd {
  void operator()(Dwarf_CFI* c) const { dwarf_cfi_end(c); }
};
struct DwarfEnd {
  void operator()(Dwarf* d) const { dwarf_end(d); }
};
struct FrameFree {
  void operator()(Dwarf_Frame* f) const { std::free(f); }  // dwarf_cfi_addrframe mallocs it
};
using CfiPtr = std::unique_ptr<Dwarf_CFI, CfiEnd>;
using DwarfPtr = std::unique_ptr<Dwarf, DwarfEnd>;
using FramePtr = std::unique_ptr<Dwarf_Frame, FrameFree>;

struct ElfLayout {
  std::vector<PcRange> code;  // executable PT_LOAD segments, by address
  std::vector<CodeSegment> segments;  // the same, with their file offsets
  Elf_Scn* eh_frame = nullptr;
  Elf_Scn* debug_frame = nullptr;
  perfdata::BuildId build_id;
};

Result<ElfLayout> read_layout(Elf* elf, const std::string& path) {
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) return Error(path + ": no ELF header");
  if (gelf_getclass(elf) != ELFCLASS64 || ehdr.e_machine != EM_X86_64)
    return Error(path + ": not an x86-64 ELF file");
  // libelf reads what lies past the end of a cut file as "no sections" rather than fail.
  size_t file_size = 0;
  elf_rawfile(elf, &file_size);
  if (ehdr.e_shoff + uint64_t{ehdr.e_shnum} * ehdr.e_shentsize > file_size ||
      ehdr.e_phoff + uint64_t{ehdr.e_phnum} * ehdr.e_phentsize > file_size)
    return Error(path + ": truncated (headers past the end of the file)");
  ElfLayout out;
  size_t nphdr = 0;
  if (elf_getphdrnum(elf, &nphdr) != 0) return Error(path + ": program headers unreadable");
  for (size_t i = 0; i < nphdr; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr) return Error(path + ": program header unreadable");
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && ph.p_memsz > 0) {
      out.code.push_back({ph.p_vaddr, ph.p_vaddr + ph.p_memsz});
      out.segments.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz});
    }
  }
  std::sort(out.code.begin(), out.code.end(), [](auto& a, auto& b) { return a.start < b.start; });
  std::sort(out.segments.begin(), out.segments.end(), [](auto& a, auto& b) { return a.vaddr < b.vaddr; });

  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return Error(path + ": section names unreadable");
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) return Error(path + ": section header unreadable");
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name == nullptr) continue;
    if (sh.sh_type != SHT_NOBITS && sh.sh_offset + sh.sh_size > file_size)
      return Error(path + ": truncated (section " + name + " past the end of the file)");
    CfiSection cfi = cfi_section(name, sh.sh_type);
    if (cfi == CfiSection::eh_frame)
      out.eh_frame = scn;
    else if (cfi == CfiSection::debug_frame)
      out.debug_frame = scn;
    else if (sh.sh_type == SHT_NOTE && out.build_id.empty()) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      if (d && d->d_buf) out.build_id = parse_build_id_note(static_cast<const uint8_t*>(d->d_buf), d->d_size);
    }
  }
  return out;
}

bool inside_code(const PcRange& r, const std::vector<PcRange>& code) {
  return std::any_of(code.begin(), code.end(), [&](auto& c) { return r.start >= c.start && r.end <= c.end; });
}

// Sorted, with each range cut where the next one starts: a later FDE wins over an earlier one.
std::vector<PcRange> disjoint(std::vector<PcRange> ranges, uint64_t& overlapping) {
  std::sort(ranges.begin(), ranges.end(), [](auto& a, auto& b) { return a.start < b.start; });
  std::vector<PcRange> out;
  for (const PcRange& r : ranges) {
    if (!out.empty() && r.start < out.back().end) {
      ++overlapping;
      out.back().end = r.start;
      if (out.back().end == out.back().start) out.pop_back();
    }
    out.push_back(r);
  }
  return out;
}

// The parts of `ranges` that none of `taken` (sorted, disjoint) covers.
std::vector<PcRange> subtract(const std::vector<PcRange>& ranges, const std::vector<PcRange>& taken) {
  std::vector<PcRange> out;
  for (PcRange r : ranges) {
    auto it = std::upper_bound(taken.begin(), taken.end(), r.start, [](uint64_t a, auto& t) { return a < t.end; });
    for (; it != taken.end() && it->start < r.end && r.start < r.end; ++it) {
      if (it->start > r.start) out.push_back({r.start, it->start});
      r.start = std::max(r.start, it->end);
    }
    if (r.start < r.end) out.push_back(r);
  }
  return out;
}

struct Span {
  PcRange range;
  Dwarf_CFI* cfi;
};

struct RawRow {
  uint64_t pc;
  FrameRule rule;
};

// One row per range of constant rules inside the span, as libdw reports the ranges.
void append_rows(const Span& span, std::vector<RawRow>& rows) {
  uint64_t pc = span.range.start;
  while (pc < span.range.end) {
    Dwarf_Frame* raw = nullptr;
    if (dwarf_cfi_addrframe(span.cfi, pc, &raw) != 0) {
      rows.push_back({pc, {offwake_unwind_pack(OFFWAKE_UNWIND_UNSUPPORTED, 0, 0), "libdw: no rules for the address"}});
      return;
    }
    FramePtr frame(raw);
    Dwarf_Addr start = 0, end = 0;
    dwarf_frame_info(frame.get(), &start, &end, nullptr);
    rows.push_back({pc, classify_frame(frame.get())});
    pc = end > pc ? std::min<uint64_t>(end, span.range.end) : span.range.end;
  }
}

void merge_and_count(std::vector<RawRow>& raw, uint64_t code_end, UnwindTable& table) {
  std::vector<RawRow> merged;
  for (const RawRow& r : raw) {
    if (!merged.empty() && merged.back().pc == r.pc) merged.pop_back();  // empty range before
    if (!merged.empty() && merged.back().rule == r.rule) continue;
    merged.push_back(r);
  }
  if (!merged.empty() && offwake_unwind_kind(merged.front().rule.rule) == OFFWAKE_UNWIND_NONE)
    merged.erase(merged.begin());
  table.rows.reserve(merged.size());
  for (size_t i = 0; i < merged.size(); ++i) {
    const RawRow& r = merged[i];
    uint32_t kind = offwake_unwind_kind(r.rule.rule);
    uint64_t next = i + 1 < merged.size() ? merged[i + 1].pc : code_end;
    table.rows.push_back({static_cast<uint32_t>(r.pc - table.base), r.rule.rule});
    ++table.stats.rows_by_kind[kind];
    table.stats.code_bytes_by_kind[kind] += next - r.pc;
    if (r.rule.reason) ++table.stats.rows_by_reason[r.rule.reason];
  }
}

}  // namespace

uint32_t UnwindTable::rule_at(uint64_t vaddr) const {
  if (vaddr < base || vaddr - base > UINT32_MAX) return uint32_t{OFFWAKE_UNWIND_NONE};
  long i = offwake_unwind_search(rows.data(), static_cast<uint32_t>(rows.size()), static_cast<uint32_t>(vaddr - base));
  return i < 0 ? uint32_t{OFFWAKE_UNWIND_NONE} : rows[static_cast<size_t>(i)].rule;
}

std::optional<uint64_t> UnwindTable::bias(uint64_t start, uint64_t pgoff) const {
  // pc minus the load bias is the ELF address, minus base the row pc.
  for (const CodeSegment& seg : segments)
    if (auto bias = segment_load_bias(start, pgoff, seg.offset, seg.vaddr, seg.filesz)) return *bias + base;
  return std::nullopt;
}

Result<UnwindTable> build_unwind_table(const std::string& path) {
  auto handle = ElfHandle::open(path);
  if (!handle) return handle.error();
  Elf* elf = handle->get();
  auto layout = read_layout(elf, path);
  if (!layout) return layout.error();

  UnwindTable table;
  table.path = path;
  table.build_id = layout->build_id;
  table.segments = layout->segments;
  if (layout->code.empty()) {
    table.empty_reason = "no executable segment";
    return table;
  }
  table.base = layout->code.front().start;
  if (layout->code.back().end - table.base > UINT32_MAX) return Error(path + ": code spans more than 4 GiB");
  if (!layout->eh_frame && !layout->debug_frame) {
    table.empty_reason = "no .eh_frame or .debug_frame section";
    return table;
  }

  // Declared after the ElfHandle: released before it.
  CfiPtr eh_cfi;
  DwarfPtr dwarf;
  Dwarf_CFI* debug_cfi = nullptr;
  std::vector<PcRange> eh_ranges, debug_ranges;
  auto read_fdes = [&](Elf_Scn* scn, bool eh, uint64_t& count) -> Result<std::vector<PcRange>> {
    auto entries = read_cfi_entries(elf, scn, eh);
    if (!entries) return entries.error().context(path);
    table.stats.fdes_unreadable += entries->unreadable;
    std::vector<PcRange> kept;
    for (const PcRange& r : entries->fdes) {
      ++count;
      if (inside_code(r, layout->code))
        kept.push_back(r);
      else
        ++table.stats.fdes_outside_code;
    }
    return disjoint(std::move(kept), table.stats.fdes_overlapping);
  };
  if (layout->eh_frame) {
    eh_cfi.reset(dwarf_getcfi_elf(elf));
    if (!eh_cfi) return Error(path + ": .eh_frame: " + dwarf_errmsg(-1));
    auto r = read_fdes(layout->eh_frame, true, table.stats.fdes_eh_frame);
    if (!r) return r.error();
    eh_ranges = std::move(*r);
    table.sources.push_back(".eh_frame");
  }
  if (layout->debug_frame) {
    dwarf.reset(dwarf_begin_elf(elf, DWARF_C_READ, nullptr));
    debug_cfi = dwarf ? dwarf_getcfi(dwarf.get()) : nullptr;
    if (!debug_cfi) return Error(path + ": .debug_frame: " + dwarf_errmsg(-1));
    auto r = read_fdes(layout->debug_frame, false, table.stats.fdes_debug_frame);
    if (!r) return r.error();
    // .eh_frame is what the program itself unwinds with: .debug_frame only fills its gaps.
    debug_ranges = subtract(*r, eh_ranges);
    table.sources.push_back(".debug_frame");
  }

  std::vector<Span> spans;
  for (const PcRange& r : eh_ranges) spans.push_back({r, eh_cfi.get()});
  for (const PcRange& r : debug_ranges) spans.push_back({r, debug_cfi});
  std::sort(spans.begin(), spans.end(), [](auto& a, auto& b) { return a.range.start < b.range.start; });

  std::vector<RawRow> raw;
  for (size_t i = 0; i < spans.size(); ++i) {
    append_rows(spans[i], raw);
    // Between functions nothing is known: a row says so rather than let the last rule run on.
    if (i + 1 == spans.size() || spans[i + 1].range.start > spans[i].range.end)
      raw.push_back({spans[i].range.end, FrameRule{}});
  }
  merge_and_count(raw, layout->code.back().end, table);
  if (table.rows.empty())
    table.empty_reason = "no FDE covers executable code (" + std::to_string(table.stats.fdes_eh_frame) +
                         " in .eh_frame, " + std::to_string(table.stats.fdes_debug_frame) + " in .debug_frame, " +
                         std::to_string(table.stats.fdes_unreadable) + " unreadable)";
  return table;
}

}  // namespace offwake::unwind
