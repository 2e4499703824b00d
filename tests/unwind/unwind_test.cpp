// Unwind tables against the truth: every row compared with readelf's reading of the same
// CFI (an independent DWARF reader), for a program built without frame pointers, its
// .debug_frame twin, libc and python3.11; the rules of the program's functions by name; and
// files without CFI, truncated or garbage.
#include <gelf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "support/run.h"
#include "synth/elf_file.h"
#include "unwind/frame_rule.h"
#include "unwind/readelf_frames.h"
#include "unwind/table_text.h"
#include "unwind/unwind_table.h"
#include "util/elf_handle.h"

namespace offwake::test {
namespace {

using unwind::UnwindTable;

const std::string kTarget = UNWIND_TARGET;
const std::string kTargetDebugFrame = UNWIND_TARGET_DEBUG_FRAME;
const std::string kLibc = "/lib/x86_64-linux-gnu/libc.so.6";
const std::string kPython = "/usr/bin/python3.11";

UnwindTable build(const std::string& path) {
  auto t = unwind::build_unwind_table(path);
  if (!t) ADD_FAILURE() << t.error().message();
  return t ? std::move(t).value() : UnwindTable{};
}

uint32_t kind_at(const UnwindTable& t, uint64_t vaddr) { return offwake_unwind_kind(t.rule_at(vaddr)); }

// The rule in effect at `pc` in a step function, NONE before its first row.
uint32_t rule_in(const std::vector<TruthRow>& rows, uint64_t pc) {
  auto it = std::upper_bound(rows.begin(), rows.end(), pc, [](uint64_t p, const TruthRow& r) { return p < r.pc; });
  return it == rows.begin() ? 0 : std::prev(it)->rule;
}

std::string describe(uint32_t rule) { return unwind::format_rule(rule); }

// Every row of the table equals readelf's reading, PLT and other expressions taken as one
// kind (readelf shows both as "exp"); the first differences are named by address.
void expect_matches_readelf(const UnwindTable& table) {
  std::string error;
  std::vector<ReadelfFde> fdes = readelf_frames(table.path, &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_FALSE(fdes.empty()) << "readelf found no FDE in " << table.path;
  std::vector<TruthRow> truth = truth_rows(fdes);
  std::vector<TruthRow> mine;
  for (const offwake_unwind_row& r : table.rows) mine.push_back({table.base + r.pc, r.rule});
  mine = collapsed_rows(mine);

  std::vector<uint64_t> boundaries;
  for (auto& r : truth) boundaries.push_back(r.pc);
  for (auto& r : mine) boundaries.push_back(r.pc);
  std::sort(boundaries.begin(), boundaries.end());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
  int shown = 0;
  size_t differ = 0;
  for (uint64_t pc : boundaries) {
    uint32_t want = rule_in(truth, pc), got = rule_in(mine, pc);
    if (want == got) continue;
    ++differ;
    if (shown++ < 20)
      ADD_FAILURE() << table.path << std::hex << " at 0x" << pc << ": readelf " << describe(want) << ", table "
                    << describe(got);
  }
  EXPECT_EQ(differ, 0u) << "addresses where the table and readelf differ";
  EXPECT_EQ(mine.size(), truth.size());
}

// Rows of each kind in readelf's reading, collapsed as in expect_matches_readelf.
std::array<uint64_t, OFFWAKE_UNWIND_KINDS> readelf_kinds(const std::string& path) {
  std::string error;
  std::array<uint64_t, OFFWAKE_UNWIND_KINDS> n{};
  for (const TruthRow& r : truth_rows(readelf_frames(path, &error))) ++n[offwake_unwind_kind(r.rule)];
  return n;
}

// The kinds that end a walk are counted as readelf counts them; PLT and EXPRESSION together.
void expect_counts_match_readelf(const UnwindTable& t) {
  auto want = readelf_kinds(t.path);
  const auto& got = t.stats.rows_by_kind;
  for (uint32_t k : {OFFWAKE_UNWIND_SIGNAL, OFFWAKE_UNWIND_END_OF_STACK, OFFWAKE_UNWIND_UNSUPPORTED})
    EXPECT_EQ(got[k], want[k]) << unwind::kind_name(k);
  // A PLT row next to an EXPRESSION one is two rows in the table, one in readelf's reading.
  EXPECT_GE(got[OFFWAKE_UNWIND_PLT] + got[OFFWAKE_UNWIND_EXPRESSION], want[OFFWAKE_UNWIND_EXPRESSION]);
}

struct Range {
  uint64_t start = 0, end = 0;
};

Range function(const std::string& path, const std::string& name) {
  auto elf = ElfFile::open(path);
  if (!elf) return {};
  auto sym = elf->find_function(name);
  return sym ? Range{sym->value, sym->value + sym->size} : Range{};
}

Range section(const std::string& path, const std::string& name) {
  auto h = ElfHandle::open(path);
  if (!h) return {};
  size_t shstrndx = 0;
  elf_getshdrstrndx(h->get(), &shstrndx);
  for (Elf_Scn* s = elf_nextscn(h->get(), nullptr); s; s = elf_nextscn(h->get(), s)) {
    GElf_Shdr sh;
    gelf_getshdr(s, &sh);
    const char* n = elf_strptr(h->get(), shstrndx, sh.sh_name);
    if (n && name == n) return {sh.sh_addr, sh.sh_addr + sh.sh_size};
  }
  return {};
}

// The rows that hold any part of [r.start, r.end).
std::vector<uint32_t> rules_within(const UnwindTable& t, Range r) {
  std::vector<uint32_t> out{t.rule_at(r.start)};
  for (const offwake_unwind_row& row : t.rows)
    if (t.base + row.pc > r.start && t.base + row.pc < r.end) out.push_back(row.rule);
  return out;
}

size_t count_kind(const std::vector<uint32_t>& rules, uint32_t kind) {
  return std::count_if(rules.begin(), rules.end(), [&](uint32_t r) { return offwake_unwind_kind(r) == kind; });
}

TEST(UnwindRow, PacksAndSearchesWithinItsBound) {
  uint32_t r = offwake_unwind_pack(OFFWAKE_UNWIND_CFA_RBP, 16, -16);
  EXPECT_EQ(offwake_unwind_kind(r), unsigned{OFFWAKE_UNWIND_CFA_RBP});
  EXPECT_EQ(offwake_unwind_cfa_offset(r), 16u);
  EXPECT_EQ(offwake_unwind_rbp_offset(r), -16);
  r = offwake_unwind_pack(OFFWAKE_UNWIND_CFA_RSP, OFFWAKE_UNWIND_CFA_MAX, OFFWAKE_UNWIND_RBP_MIN);
  EXPECT_EQ(offwake_unwind_cfa_offset(r), unsigned{OFFWAKE_UNWIND_CFA_MAX});
  EXPECT_EQ(offwake_unwind_rbp_offset(r), OFFWAKE_UNWIND_RBP_MIN);
  EXPECT_EQ(offwake_unwind_rbp_offset(offwake_unwind_pack(1, 8, OFFWAKE_UNWIND_RBP_MAX)), OFFWAKE_UNWIND_RBP_MAX);
  EXPECT_EQ(offwake_unwind_cfa(offwake_unwind_pack(OFFWAKE_UNWIND_PLT, 11, 0), 0x1000, 0, 0x2030), 0x1008u);
  EXPECT_EQ(offwake_unwind_cfa(offwake_unwind_pack(OFFWAKE_UNWIND_PLT, 11, 0), 0x1000, 0, 0x203b), 0x1010u);
  EXPECT_EQ(sizeof(offwake_unwind_row), 8u);

  EXPECT_EQ(offwake_unwind_search(nullptr, 0, 5), -1);
  std::vector<offwake_unwind_row> rows;
  for (uint32_t i = 0; i < 100000; ++i) rows.push_back({10 + 3 * i, i});
  auto n = static_cast<uint32_t>(rows.size());
  EXPECT_EQ(offwake_unwind_search(rows.data(), n, 9), -1);
  EXPECT_EQ(offwake_unwind_search(rows.data(), n, 10), 0);
  EXPECT_EQ(offwake_unwind_search(rows.data(), n, 12), 0);
  EXPECT_EQ(offwake_unwind_search(rows.data(), n, 13), 1);
  EXPECT_EQ(offwake_unwind_search(rows.data(), n, 10 + 3 * 99999), 99999);
  EXPECT_EQ(offwake_unwind_search(rows.data(), n, UINT32_MAX), 99999);
  for (uint32_t pc = 0; pc < 10 + 3 * n; pc += 7)
    ASSERT_EQ(offwake_unwind_search(rows.data(), n, pc), pc < 10 ? -1 : long((pc - 10) / 3)) << pc;
}

TEST(UnwindTable, TargetRowsMatchReadelf) {
  UnwindTable t = build(kTarget);
  std::cout << unwind::format_summary(t);
  ASSERT_FALSE(t.rows.empty()) << t.empty_reason;
  EXPECT_EQ(t.sources, std::vector<std::string>{".eh_frame"});
  EXPECT_FALSE(t.build_id.empty());
  EXPECT_EQ(t.stats.fdes_unreadable + t.stats.fdes_outside_code + t.stats.fdes_overlapping, 0u);
  expect_matches_readelf(t);
  expect_counts_match_readelf(t);
}

TEST(UnwindTable, TargetFunctionsHaveTheirKnownRules) {
  UnwindTable t = build(kTarget);
  ASSERT_FALSE(t.rows.empty()) << t.empty_reason;

  // Without a frame pointer: the CFA moves with rsp, past the 64-byte buffer, rbp untouched.
  Range recurse = function(kTarget, "unwind_target_recurse");
  ASSERT_NE(recurse.end, 0u);
  std::vector<uint32_t> rules = rules_within(t, recurse);
  EXPECT_EQ(count_kind(rules, OFFWAKE_UNWIND_CFA_RSP), rules.size());
  EXPECT_EQ(offwake_unwind_cfa_offset(t.rule_at(recurse.start)), 8u);
  EXPECT_GT(offwake_unwind_cfa_offset(*std::max_element(rules.begin(), rules.end(), [](uint32_t a, uint32_t b) {
              return offwake_unwind_cfa_offset(a) < offwake_unwind_cfa_offset(b);
            })),
            64u);

  // alloca keeps a frame pointer: CFA = rbp + 16, rbp saved at CFA - 16.
  rules = rules_within(t, function(kTarget, "unwind_target_alloca"));
  EXPECT_GE(std::count(rules.begin(), rules.end(), offwake_unwind_pack(OFFWAKE_UNWIND_CFA_RBP, 16, -16)), 1);

  // Stack realignment through r10 (DRAP), then through an expression: marked, never followed.
  rules = rules_within(t, function(kTarget, "unwind_target_realign"));
  EXPECT_GE(count_kind(rules, OFFWAKE_UNWIND_UNSUPPORTED), 1u);
  EXPECT_GE(count_kind(rules, OFFWAKE_UNWIND_EXPRESSION), 1u);
  EXPECT_GE(t.stats.rows_by_reason["CFA from a register other than rsp or rbp"], 1u);
  EXPECT_GE(t.stats.rows_by_reason["CFA expression"], 1u);

  // _start: the return address is undefined, the end of every stack of the program.
  EXPECT_EQ(kind_at(t, function(kTarget, "_start").start), unsigned{OFFWAKE_UNWIND_END_OF_STACK});

  // The lazy PLT: its first entry pushes twice, every other one is binutils' expression.
  Range plt = section(kTarget, ".plt");
  ASSERT_GE(plt.end - plt.start, 32u);
  for (uint64_t pc = plt.start + 16; pc < plt.end; ++pc) {
    ASSERT_EQ(kind_at(t, pc), unsigned{OFFWAKE_UNWIND_PLT}) << std::hex << pc;
    ASSERT_EQ(offwake_unwind_cfa_offset(t.rule_at(pc)), 11u);
  }
  EXPECT_EQ(kind_at(t, plt.start), unsigned{OFFWAKE_UNWIND_CFA_RSP});
  // Nowhere else.
  for (const offwake_unwind_row& r : t.rows) {
    if (offwake_unwind_kind(r.rule) == OFFWAKE_UNWIND_PLT) {
      EXPECT_TRUE(t.base + r.pc >= plt.start && t.base + r.pc < plt.end) << std::hex << t.base + r.pc;
    }
  }

  // Between functions, and past the last: nothing.
  EXPECT_EQ(kind_at(t, t.base + t.rows.back().pc), unsigned{OFFWAKE_UNWIND_NONE});
  EXPECT_EQ(t.rule_at(t.base - 1), unsigned{OFFWAKE_UNWIND_NONE});
}

TEST(UnwindTable, DebugFrameFillsWhatEhFrameLacks) {
  UnwindTable t = build(kTargetDebugFrame);
  std::cout << unwind::format_summary(t);
  ASSERT_FALSE(t.rows.empty()) << t.empty_reason;
  EXPECT_EQ(t.sources, (std::vector<std::string>{".eh_frame", ".debug_frame"}));
  EXPECT_GE(t.stats.fdes_debug_frame, 3u);  // the three functions, at least
  std::vector<uint32_t> rules = rules_within(t, function(kTargetDebugFrame, "unwind_target_recurse"));
  EXPECT_EQ(count_kind(rules, OFFWAKE_UNWIND_CFA_RSP), rules.size());
  EXPECT_GT(rules.size(), 1u);
  EXPECT_EQ(kind_at(t, function(kTargetDebugFrame, "_start").start), unsigned{OFFWAKE_UNWIND_END_OF_STACK});
  expect_matches_readelf(t);
  expect_counts_match_readelf(t);
}

TEST(UnwindTable, LibcRowsMatchReadelf) {
  UnwindTable t = build(kLibc);
  std::cout << unwind::format_summary(t);
  ASSERT_FALSE(t.rows.empty()) << t.empty_reason;
  EXPECT_EQ(t.stats.fdes_unreadable + t.stats.fdes_outside_code + t.stats.fdes_overlapping, 0u);
  expect_matches_readelf(t);
  expect_counts_match_readelf(t);
  // __restore_rt's signal frame, the thread starts' ends of stack, the PLT.
  const auto& k = t.stats.rows_by_kind;
  EXPECT_GE(k[OFFWAKE_UNWIND_SIGNAL], 1u);
  EXPECT_GE(k[OFFWAKE_UNWIND_END_OF_STACK], 1u);
  EXPECT_GE(k[OFFWAKE_UNWIND_PLT], 1u);
  // vfork pops its return address into rdi before the system call, where its parent blocks
  // until the child execs: followed from the first frame (the registers the thread entered
  // the kernel with).
  const Range vfork = function(kLibc, "__vfork");
  EXPECT_EQ(kind_at(t, vfork.start), unsigned{OFFWAKE_UNWIND_CFA_RSP});
  EXPECT_EQ(t.rule_at(vfork.start + 8), offwake_unwind_pack(OFFWAKE_UNWIND_RA_RDI, 0, 0))
      << describe(t.rule_at(vfork.start + 8));
  EXPECT_EQ(k[OFFWAKE_UNWIND_RA_RDI], 2u);  // before and after the push that puts it back
  // What a walker cannot follow is a sliver of libc (the context switchers, __longjmp, the
  // trampoline): under 0.1% of its code.
  uint64_t code = 0, lost = 0;
  for (uint32_t i = 0; i < OFFWAKE_UNWIND_KINDS; ++i) code += i == OFFWAKE_UNWIND_NONE ? 0 : t.stats.code_bytes_by_kind[i];
  lost = t.stats.code_bytes_by_kind[OFFWAKE_UNWIND_EXPRESSION] + t.stats.code_bytes_by_kind[OFFWAKE_UNWIND_UNSUPPORTED];
  EXPECT_LT(lost * 1000, code) << lost << " of " << code << " bytes";
}

TEST(UnwindTable, Python311RowsMatchReadelf) {
  if (access(kPython.c_str(), R_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  UnwindTable t = build(kPython);
  std::cout << unwind::format_summary(t);
  ASSERT_FALSE(t.rows.empty()) << t.empty_reason;
  EXPECT_EQ(t.stats.fdes_unreadable + t.stats.fdes_outside_code + t.stats.fdes_overlapping, 0u);
  expect_matches_readelf(t);
  expect_counts_match_readelf(t);
  EXPECT_EQ(t.stats.rows_by_kind[OFFWAKE_UNWIND_END_OF_STACK], 1u);  // _start
  EXPECT_EQ(t.stats.rows_by_kind[OFFWAKE_UNWIND_UNSUPPORTED], 0u);
}

// The dynamic loader and libstdc++ (both on every machine that runs this test), and any
// file named in OFFWAKE_UNWIND_FILES (colon-separated: nginx, say), row by row.
TEST(UnwindTable, MoreFilesMatchReadelf) {
  std::vector<std::string> files = {"/lib64/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"};
  if (const char* more = getenv("OFFWAKE_UNWIND_FILES")) {
    std::stringstream in(more);
    for (std::string f; std::getline(in, f, ':');)
      if (!f.empty()) files.push_back(f);
  }
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    UnwindTable t = build(f);
    std::cout << unwind::format_summary(t);
    ASSERT_FALSE(t.rows.empty()) << t.empty_reason;
    EXPECT_EQ(t.stats.fdes_unreadable + t.stats.fdes_outside_code + t.stats.fdes_overlapping, 0u);
    expect_matches_readelf(t);
    expect_counts_match_readelf(t);
  }
}

TEST(UnwindTable, NoCfiGivesAnEmptyTableAndSaysWhy) {
  TempDir dir;
  std::string stripped = dir.file("no_eh_frame");
  RunResult r = run("objcopy --remove-section .eh_frame --remove-section .eh_frame_hdr --remove-section .debug_frame '" +
                    kTarget + "' '" + stripped + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  UnwindTable t = build(stripped);
  EXPECT_TRUE(t.rows.empty());
  EXPECT_EQ(t.empty_reason, "no .eh_frame or .debug_frame section");
  EXPECT_EQ(t.bytes(), 0u);
  EXPECT_EQ(t.rule_at(function(kTarget, "main").start), unsigned{OFFWAKE_UNWIND_NONE});
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(UnwindTable, GarbageAndTruncatedFilesAreErrorsNotCrashes) {
  TempDir dir;
  std::string elf = read_all(kTarget);
  ASSERT_GT(elf.size(), 4096u);

  std::mt19937 random(23);
  std::string noise(8192, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  write_all(dir.file("noise"), noise);
  auto t = unwind::build_unwind_table(dir.file("noise"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("not an ELF file"), std::string::npos) << t.error().message();

  EXPECT_FALSE(unwind::build_unwind_table(dir.file("missing")).ok());
  EXPECT_FALSE(unwind::build_unwind_table(dir.path()).ok());  // a directory

  // Cut inside the ELF header, after it, and before the section headers at the end.
  for (size_t size : {size_t{40}, size_t{64}, size_t{4096}, elf.size() / 2, elf.size() - 100}) {
    write_all(dir.file("cut"), elf.substr(0, size));
    auto cut = unwind::build_unwind_table(dir.file("cut"));
    EXPECT_FALSE(cut.ok()) << size << " bytes: " << (cut ? unwind::format_summary(*cut) : "");
  }

  // .eh_frame overwritten: no crash, and no row from it. The entries cannot be read.
  Range eh = section(kTarget, ".eh_frame");
  auto h = ElfHandle::open(kTarget);
  ASSERT_TRUE(h.ok());
  GElf_Shdr sh{};
  size_t shstrndx = 0;
  elf_getshdrstrndx(h->get(), &shstrndx);
  for (Elf_Scn* s = elf_nextscn(h->get(), nullptr); s; s = elf_nextscn(h->get(), s)) {
    gelf_getshdr(s, &sh);
    if (std::string(elf_strptr(h->get(), shstrndx, sh.sh_name)) == ".eh_frame") break;
  }
  ASSERT_EQ(sh.sh_addr, eh.start);
  for (char fill : {'\xff', '\x00', '\x7f'}) {
    std::string bad = elf;
    std::fill(bad.begin() + static_cast<long>(sh.sh_offset), bad.begin() + static_cast<long>(sh.sh_offset + sh.sh_size), fill);
    write_all(dir.file("bad_eh_frame"), bad);
    auto corrupt = unwind::build_unwind_table(dir.file("bad_eh_frame"));
    if (corrupt.ok()) {
      EXPECT_TRUE(corrupt->rows.empty() || corrupt->stats.fdes_unreadable > 0) << unwind::format_summary(*corrupt);
    }
  }

  // Random bytes over .eh_frame, many times: only that it never crashes (ASan in sanitize).
  for (int round = 0; round < 50; ++round) {
    std::string bad = elf;
    for (size_t i = sh.sh_offset; i < sh.sh_offset + sh.sh_size; ++i)
      if (random() % 8 == 0) bad[i] = static_cast<char>(random());
    write_all(dir.file("fuzzed"), bad);
    (void)unwind::build_unwind_table(dir.file("fuzzed"));
  }
}

}  // namespace
}  // namespace offwake::test
