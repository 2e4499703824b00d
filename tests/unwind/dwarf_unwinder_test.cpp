// The libdwfl unwinder of user stack copies (--call-graph dwarf), on a copy this test takes of
// its own registers and stack (self_dump.c, built without frame pointers, so that only
// .eh_frame finds the callers): the callers down to main and the program's start, named by the
// dynamic linker; each way an unwinding ends early or not at all, counted under its cause and
// nowhere else; the process's mappings as its records say them (RecordedMappings), and the load
// biases (MappedFile) against the dynamic linker's.
#include "unwind/dwarf_unwinder.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <memory>

#include "callchain/user_regs.h"
#include "synth/own_vdso.h"
#include "synth/proc_maps.h"
#include "unwind/self_dump.h"

namespace offwake::unwind {
namespace {

constexpr uint64_t kKernelIp = 0xffffffff81000000;

std::unique_ptr<self_dump> take_dump() {
  auto d = std::make_unique<self_dump>();
  self_dump_outer(d.get());
  return d;
}

// The sample perf_event would have written at that point, with a copy of `copy` bytes (all
// that was copied when 0).
UserStackDump sample_of(const self_dump& d, size_t copy = 0) {
  UserStackDump u;
  u.abi = PERF_SAMPLE_REGS_ABI_64;
  u.regs_mask = kUserRegsMask;
  for (unsigned r = 0; r < 64; ++r)
    if (kUserRegsMask >> r & 1) u.regs.push_back(d.regs[r]);
  u.stack_size = copy ? copy : sizeof d.stack;
  u.stack.assign(d.stack, d.stack + (copy ? std::min(copy, d.copied) : d.copied));
  return u;
}

// A frame's function by the dynamic linker's symbols (the test exports its own: ENABLE_EXPORTS).
std::string name_of(uint64_t pc) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(pc), &info) || !info.dli_sname) return "?";
  return info.dli_sname;
}

std::vector<std::string> user_names(const Callchain& chain) {
  std::vector<std::string> names;
  for (const Frame& f : chain.frames())
    if (f.context == FrameContext::kUser) names.push_back(name_of(f.ip));
  return names;
}

uint64_t outcomes(const UserUnwindCounts& c) {
  return c.complete + c.copy_too_small + c.max_stack + c.stopped + c.no_registers + c.empty_copy + c.no_mapping;
}

uint32_t self_pid() { return static_cast<uint32_t>(getpid()); }
uint32_t self_tid() { return static_cast<uint32_t>(gettid()); }

// The executable file mappings of this process as MMAP2 records, as a recording has them.
std::vector<perfdata::Mmap2Record> own_mmaps() {
  std::vector<perfdata::Mmap2Record> out;
  auto maps = read_proc_maps(getpid());
  EXPECT_TRUE(maps);
  if (!maps) return out;
  for (const ProcMapping& m : *maps) {
    perfdata::Mmap2Record r;
    r.pid = r.tid = self_pid();
    r.start = m.start;
    r.len = m.end - m.start;
    r.pgoff = m.pgoff;
    r.prot = (m.perms[0] == 'r' ? PROT_READ : 0) | (m.perms[2] == 'x' ? PROT_EXEC : 0);
    r.filename = m.path;
    out.push_back(r);
  }
  return out;
}

void expect_own_callers(const std::vector<std::string>& names) {
  ASSERT_GE(names.size(), 6u);
  EXPECT_EQ(names[0], "self_dump_leaf");
  for (int i = 1; i <= SELF_DUMP_DEPTH + 1; ++i) EXPECT_EQ(names[i], "self_dump_middle") << "frame " << i;
  EXPECT_EQ(names[SELF_DUMP_DEPTH + 2], "self_dump_outer");
  EXPECT_NE(std::find(names.begin(), names.end(), "main"), names.end()) << ::testing::PrintToString(names);
  EXPECT_EQ(names.back(), "_start") << ::testing::PrintToString(names);
}

TEST(DwarfUnwinder, OwnStackCopyUnwindsToTheProgramsStart) {
  auto d = take_dump();
  ASSERT_LT(d->copied, sizeof d->stack) << "the copy reaches the stack's top";
  DwarfUnwinder u(DwarfUnwinderOptions{127, true});
  Callchain chain;
  chain.push(kKernelIp, FrameContext::kKernel);
  chain.push(0x1234, FrameContext::kUser);  // the kernel's user frames are replaced
  u.unwind(self_pid(), self_tid(), sample_of(*d), chain);
  ASSERT_EQ(chain.frames().front(), (Frame{kKernelIp, FrameContext::kKernel}));
  EXPECT_EQ(chain.frames()[1].ip, d->regs[PERF_REG_X86_IP]) << "the leaf is the copy's pc, exactly";
  expect_own_callers(user_names(chain));
  const UserUnwindCounts& c = u.counts();
  EXPECT_EQ(c.stacks, 1u);
  EXPECT_EQ(c.complete, 1u);
  EXPECT_EQ(c.frames, chain.count(FrameContext::kUser));
  EXPECT_GT(c.ns, 0u);
  // Again, with the process's Dwfl cached: the same frames.
  Callchain again;
  u.unwind(self_pid(), self_tid(), sample_of(*d), again);
  EXPECT_EQ(user_names(again), user_names(chain));
  EXPECT_EQ(u.counts().complete, 2u);
}

// A recording's mappings (MMAP2 records), not /proc: the same stack. A build id that is not
// the file's makes the file unusable, and the stack its pc alone.
TEST(DwarfUnwinder, MappingsFromRecordsAndTheirBuildIds) {
  auto d = take_dump();
  DwarfUnwinder u(DwarfUnwinderOptions{127, false});
  for (const auto& m : own_mmaps()) u.mmap(m);
  Callchain chain;
  u.unwind(self_pid(), self_tid(), sample_of(*d), chain);
  expect_own_callers(user_names(chain));
  EXPECT_EQ(u.counts().complete, 1u);

  DwarfUnwinder wrong(DwarfUnwinderOptions{127, false});
  for (auto m : own_mmaps()) {
    m.build_id.size = 20;
    m.build_id.bytes.fill(0xee);
    wrong.mmap(m);
  }
  Callchain alone;
  wrong.unwind(self_pid(), self_tid(), sample_of(*d), alone);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone.frames()[0].ip, d->regs[PERF_REG_X86_IP]);
  EXPECT_EQ(wrong.counts().no_mapping, 1u);
  EXPECT_EQ(wrong.counts().files_unusable, 1u);
}

// A copy as large as was asked, that the unwinding reads past: "copy too small", with the
// frames found before.
TEST(DwarfUnwinder, ShortCopyEndsAtItsEnd) {
  auto d = take_dump();
  DwarfUnwinder u(DwarfUnwinderOptions{127, true});
  Callchain chain;
  u.unwind(self_pid(), self_tid(), sample_of(*d, 128), chain);
  const auto names = user_names(chain);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "self_dump_leaf");
  EXPECT_EQ(std::find(names.begin(), names.end(), "main"), names.end());
  EXPECT_EQ(u.counts().copy_too_small, 1u) << ::testing::PrintToString(names);
  EXPECT_EQ(outcomes(u.counts()), 1u);
}

TEST(DwarfUnwinder, MaxFramesCutsAndCounts) {
  auto d = take_dump();
  DwarfUnwinder u(DwarfUnwinderOptions{3, true});
  Callchain chain;
  u.unwind(self_pid(), self_tid(), sample_of(*d), chain);
  EXPECT_EQ(user_names(chain), (std::vector<std::string>{"self_dump_leaf", "self_dump_middle", "self_dump_middle"}));
  EXPECT_EQ(u.counts().max_stack, 1u);
  EXPECT_EQ(outcomes(u.counts()), 1u);
}

// Not unwound: without registers (no user context) the chain stays as it was; without a copy,
// or with a pc in no mapping, it is the pc alone. A sample that asked for no copy is not one.
TEST(DwarfUnwinder, WhatCannotBeUnwoundIsCountedByCause) {
  auto d = take_dump();
  DwarfUnwinder u(DwarfUnwinderOptions{127, true});
  Callchain kernel_only;
  kernel_only.push(kKernelIp, FrameContext::kKernel);

  UserStackDump none = sample_of(*d);
  none.abi = PERF_SAMPLE_REGS_ABI_NONE;
  none.regs.clear();
  Callchain chain = kernel_only;
  u.unwind(self_pid(), self_tid(), none, chain);
  EXPECT_EQ(chain, kernel_only);
  UserStackDump few = sample_of(*d);
  few.regs_mask &= ~(uint64_t{1} << PERF_REG_X86_SP);
  few.regs.pop_back();
  u.unwind(self_pid(), self_tid(), few, chain);
  EXPECT_EQ(chain, kernel_only);
  EXPECT_EQ(u.counts().no_registers, 2u);

  UserStackDump empty = sample_of(*d);
  empty.stack.clear();
  u.unwind(self_pid(), self_tid(), empty, chain);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain.frames()[1], (Frame{d->regs[PERF_REG_X86_IP], FrameContext::kUser}));
  EXPECT_EQ(u.counts().empty_copy, 1u);

  UserStackDump elsewhere = sample_of(*d);
  elsewhere.regs[PERF_REG_X86_IP] = 0x10;  // no mapping there
  chain = kernel_only;
  u.unwind(self_pid(), self_tid(), elsewhere, chain);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain.frames()[1].ip, 0x10u);
  EXPECT_EQ(u.counts().no_mapping, 1u);

  chain = kernel_only;
  u.unwind(self_pid(), self_tid(), UserStackDump{}, chain);
  EXPECT_EQ(chain, kernel_only);
  EXPECT_EQ(u.counts().stacks, 4u);
  EXPECT_EQ(outcomes(u.counts()), 4u);
}

perfdata::Mmap2Record exec_map(uint32_t pid, uint64_t start, uint64_t len, const std::string& path,
                               uint32_t prot = PROT_READ | PROT_EXEC, uint64_t pgoff = 0) {
  perfdata::Mmap2Record m;
  m.pid = m.tid = pid;
  m.start = start;
  m.len = len;
  m.pgoff = pgoff;
  m.prot = prot;
  m.filename = path;
  return m;
}

TEST(RecordedMappings, OverlapsReplaceForkCopiesExecClears) {
  RecordedMappings maps(false);
  maps.mmap(exec_map(10, 0x1000, 0x3000, "/lib/a.so"));
  maps.mmap(exec_map(10, 0x7000, 0x1000, "[stack]"));                   // no file: not kept
  maps.mmap(exec_map(10, 0x8000, 0x1000, "[vdso]"));                    // no file, but ours
  maps.mmap(exec_map(10, 0x9000, 0x1000, "/lib/data", PROT_READ));      // not executable
  maps.mmap(exec_map(10, 0xa000, 0x1000, "/lib/gone.so (deleted)"));   // cannot be opened
  ASSERT_NE(maps.find(10, 0x2000), nullptr);
  EXPECT_EQ(maps.find(10, 0x2000)->path, "/lib/a.so");
  EXPECT_EQ(maps.find(10, 0x4000), nullptr);
  EXPECT_EQ(maps.find(10, 0x7000), nullptr);
  ASSERT_NE(maps.find(10, 0x8000), nullptr);
  EXPECT_EQ(maps.find(10, 0x8000)->path, own_vdso_file());
  EXPECT_NE(own_vdso_file(), "");
  EXPECT_EQ(maps.find(10, 0x9000), nullptr);
  EXPECT_EQ(maps.find(10, 0xa000), nullptr);
  const uint64_t before = maps.generation(10);
  maps.mmap(exec_map(10, 0x5000, 0x1000, "/lib/b.so"));  // added beside: nothing goes stale
  EXPECT_EQ(maps.generation(10), before);
  // Data mapped over the middle page of a.so: its two ends stay, the right one at its offset.
  maps.mmap(exec_map(10, 0x2000, 0x1000, "/lib/data", PROT_READ));
  EXPECT_NE(maps.generation(10), before);
  EXPECT_EQ(maps.find(10, 0x2000), nullptr);
  ASSERT_NE(maps.find(10, 0x1000), nullptr);
  EXPECT_EQ(maps.find(10, 0x1000)->end, 0x2000u);
  ASSERT_NE(maps.find(10, 0x3800), nullptr);
  EXPECT_EQ(maps.find(10, 0x3800)->start, 0x3000u);
  EXPECT_EQ(maps.find(10, 0x3800)->pgoff, 0x2000u);

  maps.fork(10, 11);
  ASSERT_NE(maps.find(11, 0x5000), nullptr);
  EXPECT_EQ(maps.find(11, 0x5000)->path, "/lib/b.so");
  EXPECT_NE(maps.generation(11), maps.generation(10));
  const uint64_t forked = maps.generation(11);
  maps.exec(11);
  EXPECT_EQ(maps.find(11, 0x5000), nullptr);
  EXPECT_NE(maps.generation(11), forked);
  EXPECT_NE(maps.find(10, 0x5000), nullptr) << "the parent keeps its own";
  EXPECT_EQ(maps.find(12, 0x1000), nullptr) << "a process no record named has nothing (not live)";
}

// Where each file mapped in this process is placed, by its mapping and its load segments: the
// dynamic linker's load bias (dlpi_addr) for every object it loaded.
TEST(MappedFiles, BiasIsTheDynamicLinkersLoadAddress) {
  std::map<std::string, uint64_t> linker;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        if (info->dlpi_name && info->dlpi_name[0] == '/')
          (*static_cast<std::map<std::string, uint64_t>*>(arg))[info->dlpi_name] = info->dlpi_addr;
        return 0;
      },
      &linker);
  ASSERT_FALSE(linker.empty());
  auto maps = read_proc_maps(getpid());
  ASSERT_TRUE(maps);
  MappedFiles files;
  size_t compared = 0;
  for (const ProcMapping& m : *maps) {
    char real[PATH_MAX];
    auto it = linker.end();
    for (auto l = linker.begin(); l != linker.end(); ++l)
      if (realpath(l->first.c_str(), real) && m.path == real) it = l;
    if (it == linker.end() || m.perms[2] != 'x') continue;
    const MappedFile& f = files.get(m.path);
    ASSERT_TRUE(f.error.empty()) << f.error;
    EXPECT_EQ(f.bias(RecordedMapping{m.start, m.end, m.pgoff, m.path, {}, 0, 0, {}}), it->second) << m.path;
    ++compared;
  }
  EXPECT_GT(compared, 0u);
  EXPECT_FALSE(files.get("/nonexistent/lib.so").error.empty());
}

}  // namespace
}  // namespace offwake::unwind
