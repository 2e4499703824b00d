// The Symbolizer against known truth: functions of the test's own binaries (PIE and non-PIE)
// at addresses placed the way the kernel maps them, libc in this live process, the kernel's
// symbols in /proc/kallsyms, the thread model (COMM, FORK, EXIT), and honesty when a binary
// is gone or replaced.
#include <elf.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cinttypes>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "support/paths.h"
#include "support/run.h"
#include "support/scoped_env.h"
#include "symbolize/symbol_table.h"
#include "symbolize/symbolizer.h"
#include "synth/elf_file.h"
#include "synth/kernel_maps.h"
#include "synth/proc_maps.h"
#include "util/fd.h"

namespace offwake::symbolize {
namespace {

using perfdata::CommRecord;
using perfdata::Mmap2Record;
using perfdata::TaskRecord;

using test::kWorkloads;
const std::string& kPieTarget = test::kSymbolsTarget;
constexpr uint64_t kPage = 4096;

// The MMAP2 the kernel would report for `path`'s executable segment loaded at `base`.
Mmap2Record exec_mapping(uint32_t pid, const ElfFile& elf, uint64_t base) {
  for (const auto& seg : elf.segments()) {
    if (!seg.executable) continue;
    Mmap2Record m;
    m.pid = m.tid = pid;
    m.start = base + seg.vaddr / kPage * kPage;
    m.pgoff = seg.offset / kPage * kPage;
    m.len = (seg.vaddr + seg.memsz + kPage - 1) / kPage * kPage - seg.vaddr / kPage * kPage;
    m.build_id = elf.build_id();
    m.prot = 5;
    m.filename = elf.path();
    return m;
  }
  ADD_FAILURE() << "no executable segment in " << elf.path();
  return {};
}

// The runtime address of `fn`+off when `elf` is loaded at `base`.
uint64_t address_of(const ElfFile& elf, const std::string& fn, uint64_t base, uint64_t off = 4) {
  auto sym = elf.find_function(fn);
  EXPECT_TRUE(sym.has_value()) << fn;
  return sym ? base + sym->value + off : 0;
}

// A symbol's start in the DSO's file-offset space, as perf reports it.
uint64_t file_offset_of(const ElfFile& elf, const std::string& fn) {
  auto sym = elf.find_function(fn);
  EXPECT_TRUE(sym.has_value()) << fn;
  return sym ? *elf.file_offset_of(sym->value) : 0;
}

ElfFile open_elf(const std::string& path) {
  auto elf = ElfFile::open(path);
  if (!elf) throw std::runtime_error(elf.error().message());
  return std::move(elf).value();
}

TEST(SymbolTable, SizelessSymbolsEndAtTheNextAndDuplicatesKeepTheBest) {
  SymbolTable t;
  t.add("weak_alias", 0x100, 0x20, STB_WEAK);
  t.add("__strong", 0x100, 0x20, STB_GLOBAL);
  t.add("sizeless", 0x200, 0, STB_LOCAL);
  t.add("next", 0x280, 0x10, STB_GLOBAL);
  t.add("last", 0x1010, 0, STB_GLOBAL);
  t.finish(false);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t.find(0x100)->name, "__strong");  // non-weak beats weak
  EXPECT_EQ(t.find(0x11f)->name, "__strong");
  EXPECT_EQ(t.find(0x120), nullptr);           // past its size, before the next
  EXPECT_EQ(t.find(0x27f)->name, "sizeless");
  EXPECT_EQ(t.find(0x27f)->end, 0x280u);
  EXPECT_EQ(t.find(0x1010)->end, 0x3000u);     // the last one: to the page after next
  EXPECT_EQ(t.find(0xff), nullptr);
}

TEST(SymbolTable, KallsymsSameAddressKeepsTheLastAndModulesEndAtAPage) {
  SymbolTable t;
  t.add("first", 0x1000, 0, STB_GLOBAL);
  t.add("second_longer", 0x1000, 0, STB_GLOBAL);
  t.add("other", 0x1100, 0, STB_GLOBAL);
  t.add("modsym\t[mod]", 0x9000, 0, STB_LOCAL);
  t.finish(true);
  EXPECT_EQ(t.find(0x1000)->name, "second_longer");  // the only one with a size after ends
  EXPECT_EQ(t.find(0x1100)->end, 0x3000u);            // kernel -> module: not across the gap
  EXPECT_EQ(t.find(0x9000)->name, "modsym");
}

TEST(Demangle, LikePerfWithoutParameters) {
  EXPECT_EQ(demangle("_ZN2ns3BoxIlE4spinEl"), "ns::Box<long>::spin");
  EXPECT_EQ(demangle("_Z3fooi"), "foo");
  EXPECT_EQ(demangle("_ZNK3Foo3barEv"), "Foo::bar");
  EXPECT_EQ(demangle("_Z1fIiEvT_"), "f<int>");
  EXPECT_EQ(demangle("_ZnwmRKSt9nothrow_t"), "operator new");
  EXPECT_EQ(demangle("_Z3foov.cold"), "foo");
  EXPECT_EQ(demangle("_ZThn8_N3FooD1Ev"), "non-virtual thunk to Foo::~Foo()");
  EXPECT_EQ(demangle("main"), "main");
  EXPECT_EQ(demangle("_Znot_mangled"), "_Znot_mangled");
}

TEST(Symbolizer, NonPieWorkloadFunctions) {
  ElfFile elf = open_elf(kWorkloads + "wl_condvar");
  ASSERT_FALSE(elf.position_independent());
  Symbolizer s;
  s.observe(exec_mapping(100, elf, 0));
  for (const char* fn : {"wl_wait_for_signal", "wl_send_signal", "main"}) {
    auto f = s.resolve(100, address_of(elf, fn, 0), FrameContext::kUser);
    ASSERT_NE(f.sym, nullptr) << fn;
    EXPECT_EQ(f.sym->name, fn);
    EXPECT_EQ(f.dso, elf.path());
    EXPECT_TRUE(f.mapped);
    EXPECT_EQ(f.sym->start, file_offset_of(elf, fn)) << fn;  // 0x11e6 for 0x4011e6
    EXPECT_EQ(f.sym->end, f.sym->start + elf.find_function(fn)->size);
    EXPECT_EQ(f.symoff, 4u);
  }
  EXPECT_EQ(s.stats().frames, 3u);
  EXPECT_EQ(s.stats().unknown_symbol + s.stats().unknown_map, 0u);
}

TEST(Symbolizer, PieTargetFunctions) {
  ElfFile elf = open_elf(kPieTarget);
  ASSERT_TRUE(elf.position_independent());
  const uint64_t base = 0x555555554000;
  Symbolizer s;
  s.observe(exec_mapping(7, elf, base));
  for (const char* fn : {"st_leaf", "st_middle", "main"}) {
    auto f = s.resolve(7, address_of(elf, fn, base, 1), FrameContext::kUser);
    ASSERT_NE(f.sym, nullptr) << fn;
    EXPECT_EQ(f.sym->name, fn);
    EXPECT_EQ(f.sym->start, file_offset_of(elf, fn));
    EXPECT_EQ(f.dso_addr, f.sym->start + 1);
  }
  // Outside every mapping, and in another process: no map, no dso.
  auto none = s.resolve(7, 0x1000, FrameContext::kUser);
  EXPECT_EQ(none.sym, nullptr);
  EXPECT_FALSE(none.mapped);
  EXPECT_EQ(none.dso, "[unknown]");
  EXPECT_EQ(s.resolve(8, address_of(elf, "main", base), FrameContext::kUser).sym, nullptr);
  EXPECT_EQ(s.stats().unknown_map, 2u);
}

TEST(Symbolizer, LibcOfALiveProcess) {
  Symbolizer s;
  BuildIdCache cache;
  auto st = synthesize_process(getpid(), cache, [&](const perfdata::Record& r) {
    s.observe(r);
    return ok_status();
  });
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_NE(s.comm(static_cast<uint32_t>(getpid())), "[unknown]");
  auto f = s.resolve(static_cast<uint32_t>(getpid()), reinterpret_cast<uint64_t>(&::getpid) + 1, FrameContext::kUser);
  ASSERT_NE(f.sym, nullptr) << f.dso;
  EXPECT_NE(f.sym->name.find("getpid"), std::string::npos) << f.sym->name;
  EXPECT_NE(f.dso.find("libc.so"), std::string::npos) << f.dso;
  EXPECT_EQ(f.symoff, 1u);
  // This test's own code, through the same maps: a C++ function, demangled like perf.
  auto self = s.resolve(static_cast<uint32_t>(getpid()), reinterpret_cast<uint64_t>(&exec_mapping) + 1,
                        FrameContext::kUser);
  ASSERT_NE(self.sym, nullptr);
  EXPECT_TRUE(self.sym->name.ends_with("::(anonymous namespace)::exec_mapping")) << self.sym->name;
}

// The next text/data symbol after `addr` in /proc/kallsyms, read independently.
uint64_t next_kallsyms_address(uint64_t addr) {
  std::ifstream in("/proc/kallsyms");
  std::string line;
  uint64_t best = ~uint64_t{0};
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string a, type;
    l >> a >> type;
    if (std::string("TtWwDdBb").find(type[0]) == std::string::npos) continue;
    uint64_t v = std::stoull(a, nullptr, 16);
    if (v > addr && v < best) best = v;
  }
  return best;
}

TEST(Symbolizer, KernelFromKallsyms) {
  auto k = Kallsyms::load();
  ASSERT_TRUE(k.ok()) << "Kallsyms::load: " << k.error().message();  // the code under test: no skip
  Symbolizer s;
  auto kmap = kernel_mmap(*k);
  ASSERT_TRUE(kmap.ok());
  s.observe(*kmap);
  for (const char* fn : {"schedule", "do_syscall_64", "try_to_wake_up"}) {
    uint64_t addr = *k->address_of(fn);
    auto f = s.resolve(123, addr + 3, FrameContext::kKernel);
    ASSERT_NE(f.sym, nullptr) << fn;
    EXPECT_EQ(f.sym->name, fn);
    EXPECT_EQ(f.sym->start, addr);
    EXPECT_EQ(f.sym->end, next_kallsyms_address(addr)) << fn;
    EXPECT_EQ(f.dso, "[kernel.kallsyms]");
    EXPECT_EQ(f.dso_addr, addr + 3);
  }
}

TEST(Symbolizer, ForkCopiesMapsAndCommExecReplacesComm) {
  ElfFile sleep_elf = open_elf(kWorkloads + "wl_sleep");
  ElfFile pipe_elf = open_elf(kWorkloads + "wl_pipe");
  Symbolizer s;
  s.observe(CommRecord{10, 10, "parent", false, {}});
  s.observe(exec_mapping(10, sleep_elf, 0));
  s.observe(TaskRecord{false, 20, 10, 20, 10, 0, {}});  // fork: new process 20
  s.observe(TaskRecord{false, 10, 10, 11, 10, 0, {}});  // a thread of 10
  EXPECT_EQ(s.comm(20), "parent");
  EXPECT_EQ(s.comm(11), "parent");
  EXPECT_FALSE(s.has_comm(99));
  EXPECT_EQ(s.comm(99), "[unknown]");
  const uint64_t sleep_fn = address_of(sleep_elf, "wl_sleep_for", 0);
  ASSERT_NE(s.resolve(20, sleep_fn, FrameContext::kUser).sym, nullptr);
  EXPECT_EQ(s.resolve(20, sleep_fn, FrameContext::kUser).sym->name, "wl_sleep_for");

  // The child execs wl_pipe: the comm is replaced, the new text overlays the old.
  s.observe(CommRecord{20, 20, "wl_pipe", true, {}});
  s.observe(exec_mapping(20, pipe_elf, 0));
  EXPECT_EQ(s.comm(20), "wl_pipe");
  EXPECT_EQ(s.comm(10), "parent");
  auto f = s.resolve(20, address_of(pipe_elf, "main", 0), FrameContext::kUser);
  ASSERT_NE(f.sym, nullptr);
  EXPECT_EQ(f.dso, pipe_elf.path());
  EXPECT_EQ(f.sym->name, "main");
  // The parent still has its own maps.
  EXPECT_EQ(s.resolve(10, sleep_fn, FrameContext::kUser).dso, sleep_elf.path());

  // EXIT keeps the thread and its maps: aggregated samples come after it.
  s.observe(TaskRecord{true, 20, 10, 20, 10, 0, {}});
  EXPECT_EQ(s.comm(20), "wl_pipe");
  EXPECT_EQ(s.resolve(20, address_of(pipe_elf, "main", 0), FrameContext::kUser).sym->name, "main");
}

TEST(Symbolizer, PartialOverlapKeepsTheRestOfTheOldMapping) {
  ElfFile elf = open_elf(kWorkloads + "wl_condvar");
  Symbolizer s;
  Mmap2Record m = exec_mapping(5, elf, 0);
  // The file mapped three pages long (text, then what follows it in the file), and a new
  // mapping over its middle page: the old mapping keeps its front and its back, the back with
  // its file offset moved along.
  m.len = 3 * kPage;
  s.observe(m);
  Mmap2Record anon = m;
  anon.start = m.start + kPage;
  anon.len = kPage;
  anon.pgoff = 0;
  anon.filename = "[heap]";
  ASSERT_LT(address_of(elf, "main", 0), anon.start) << "main must lie in the front, which is kept";
  s.observe(anon);
  auto f = s.resolve(5, address_of(elf, "main", 0), FrameContext::kUser);
  ASSERT_NE(f.sym, nullptr);
  EXPECT_EQ(f.sym->name, "main");
  auto back = s.resolve(5, m.start + 2 * kPage + 8, FrameContext::kUser);
  EXPECT_EQ(back.dso, elf.path()) << "the back of the old mapping is lost";
  EXPECT_EQ(back.dso_addr, m.pgoff + 2 * kPage + 8);
  auto heap = s.resolve(5, anon.start + 8, FrameContext::kUser);
  EXPECT_EQ(heap.dso, "[heap]");
  EXPECT_EQ(heap.dso_addr, anon.start + 8);
  EXPECT_EQ(heap.sym, nullptr);
}

TEST(Symbolizer, GoneOrReplacedFileIsUnknownNeverWrong) {
  test::TempDir dir;
  // A build-id cache without this binary: one that has it (perf offwake record fills
  // ~/.debug) finds it by its build id, right, wherever its path went.
  test::ScopedEnv cache_dir("PERF_BUILDID_DIR", dir.file("empty-cache"));
  const std::string copy = dir.file("wl_sleep");
  std::filesystem::copy_file(kWorkloads + "wl_sleep", copy);
  ElfFile elf = open_elf(copy);
  ASSERT_FALSE(elf.build_id().empty());
  Mmap2Record m = exec_mapping(3, elf, 0);
  const uint64_t ip = address_of(elf, "wl_sleep_for", 0);
  {
    Symbolizer s;  // present and matching
    s.observe(m);
    ASSERT_NE(s.resolve(3, ip, FrameContext::kUser).sym, nullptr);
  }
  // Replaced by another ELF (a different build id): unknown, counted as a mismatch.
  std::filesystem::copy_file(kWorkloads + "wl_pipe", copy, std::filesystem::copy_options::overwrite_existing);
  {
    Symbolizer s;
    s.observe(m);
    auto f = s.resolve(3, ip, FrameContext::kUser);
    EXPECT_EQ(f.sym, nullptr) << f.sym->name;
    EXPECT_EQ(f.dso, copy);
    EXPECT_EQ(s.stats().build_id_mismatch, 1u);
  }
  // The build id only in the header (MMAP2 with maj/min/ino): checked all the same.
  {
    Symbolizer s;
    s.add_build_ids({perfdata::BuildIdEntry{-1, PERF_RECORD_MISC_USER, elf.build_id(), copy}});
    Mmap2Record no_id = m;
    no_id.build_id = {};
    s.observe(no_id);
    EXPECT_EQ(s.resolve(3, ip, FrameContext::kUser).sym, nullptr);
    EXPECT_EQ(s.stats().build_id_mismatch, 1u);
  }
  // Gone.
  std::filesystem::remove(copy);
  {
    Symbolizer s;
    s.observe(m);
    auto f = s.resolve(3, ip, FrameContext::kUser);
    EXPECT_EQ(f.sym, nullptr);
    EXPECT_EQ(f.dso, copy);
    EXPECT_TRUE(f.mapped);
    EXPECT_EQ(s.stats().missing_file, 1u);
  }
}

// What resolving an address in a mapping of `path` did, with a fresh Symbolizer.
struct FifoLookup {
  ResolvedFrame frame;
  uint64_t missing_file = 0;
  std::chrono::steady_clock::duration took{};
  bool needed_a_writer = false;  // the call did not return until the watchdog played the writer
};

// The call takes microseconds; the bound is for a loaded machine, and a blocking open of a
// FIFO without a writer never returns by itself.
constexpr auto kReturnsAtOnce = std::chrono::seconds(2);

// A watchdog plays the writer if the call has not returned by kReturnsAtOnce, so that a
// symbolizer that waits in open() fails the test instead of hanging it. Until then it does
// nothing: the symbolizer may open the FIFO without blocking (O_NONBLOCK), as long as it
// rejects it (fstat) and reads nothing.
FifoLookup resolve_in_fifo(const std::string& fifo) {
  std::mutex mu;
  std::condition_variable returned;
  bool done = false;
  FifoLookup out;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (returned.wait_for(lock, kReturnsAtOnce, [&] { return done; })) return;
    while (!done) {
      lock.unlock();
      int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // ENXIO until a reader waits
      if (fd >= 0) {
        out.needed_a_writer = true;
        close(fd);  // the waiting open() returns
      }
      lock.lock();
      returned.wait_for(lock, std::chrono::milliseconds(10), [&] { return done; });
    }
  });
  Mmap2Record m;
  m.pid = m.tid = 3;
  m.start = 0x400000;
  m.len = 0x1000;
  m.filename = fifo;
  const auto start = std::chrono::steady_clock::now();
  Symbolizer s;
  s.observe(m);
  out.frame = s.resolve(3, 0x400010, FrameContext::kUser);
  out.took = std::chrono::steady_clock::now() - start;
  out.missing_file = s.stats().missing_file;
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  returned.notify_one();
  watchdog.join();
  return out;
}

// A stripped binary keeps its .eh_frame: a frame no symbol names is named by the function its
// CFI says holds it, "[FILE+0xADDR]", ADDR where the unstripped file's symbol says the function
// starts. perf's own answer (sym) stays "[unknown]". A return address is looked up a byte
// back: at a function's end, as a caller's frame, it is still that function's call.
TEST(Symbolizer, StrippedCodeIsNamedByItsUnwindFunction) {
  test::TempDir dir;
  test::ScopedEnv cache_dir("PERF_BUILDID_DIR", dir.file("empty-cache"));  // no unstripped copy by build id
  const std::string stripped = dir.file("symbols_target");
  test::RunResult r = test::run("strip --strip-all -o '" + stripped + "' '" + kPieTarget + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  ElfFile full = open_elf(kPieTarget);
  const uint64_t base = 0x555555554000;
  Symbolizer s;
  Mmap2Record m = exec_mapping(9, full, base);
  m.filename = stripped;
  s.observe(m);
  char name[64];
  for (const char* fn : {"st_leaf", "st_middle"}) {
    auto f = s.resolve(9, address_of(full, fn, base, 1), FrameContext::kUser);
    EXPECT_EQ(f.sym, nullptr) << fn << " " << f.sym->name;
    ASSERT_NE(f.function, nullptr) << fn;
    std::snprintf(name, sizeof(name), "[symbols_target+0x%" PRIx64 "]", full.find_function(fn)->value);
    EXPECT_EQ(f.function->name, name);
    EXPECT_EQ(f.function->start, file_offset_of(full, fn));
  }
  // st_leaf's last byte + 1: as a leaf, not st_leaf's; as the caller of a leaf, st_leaf's call.
  const uint64_t leaf_end = address_of(full, "st_leaf", base, full.find_function("st_leaf")->size);
  auto as_leaf = s.resolve(9, leaf_end, FrameContext::kUser);
  std::snprintf(name, sizeof(name), "[symbols_target+0x%" PRIx64 "]", full.find_function("st_leaf")->value);
  EXPECT_TRUE(as_leaf.function == nullptr || as_leaf.function->name != name);
  Callchain chain;
  chain.push(address_of(full, "st_leaf", base, 1), FrameContext::kUser);
  chain.push(leaf_end, FrameContext::kUser);
  auto frames = s.resolve(9, chain);
  ASSERT_EQ(frames.size(), 2u);
  ASSERT_NE(frames[1].function, nullptr);
  EXPECT_EQ(frames[1].function->name, name);
  // As perf offwake script asks: perf's names only.
  Symbolizer perfs({.name_unnamed = false});
  perfs.observe(m);
  frames = perfs.resolve(9, chain);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].function, nullptr);
  EXPECT_EQ(frames[1].function, nullptr);
  // Unstripped, a frame perf names keeps perf's name; one perf does not is st_leaf's call.
  Symbolizer named;
  named.observe(exec_mapping(9, full, base));
  frames = named.resolve(9, chain);
  ASSERT_EQ(frames.size(), 2u);
  ASSERT_NE(frames[0].sym, nullptr);
  EXPECT_EQ(frames[0].function, frames[0].sym);
  ASSERT_NE(frames[1].function, nullptr);
  EXPECT_EQ(frames[1].function->name, frames[1].sym ? frames[1].sym->name : "st_leaf");
}

// A recording may name anything: a FIFO it names is never read, and naming one costs no
// wait (opening one for reading waits for a writer, and perf offwake script hung on such a
// file). The call returns at once, takes nothing from the FIFO, and counts the file as missing.
TEST(Symbolizer, NamesThatAreNotRegularFilesAreNotRead) {
  test::TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << strerror(errno);
  const auto ms = [](std::chrono::steady_clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };

  // No writer: an open() that waits for one would hang here.
  FifoLookup alone = resolve_in_fifo(fifo);
  EXPECT_FALSE(alone.needed_a_writer) << "the symbolizer waited in open() for a writer of " << fifo;
  EXPECT_LT(alone.took, kReturnsAtOnce) << ms(alone.took) << " ms";
  EXPECT_EQ(alone.frame.sym, nullptr);
  EXPECT_EQ(alone.frame.dso, fifo);
  EXPECT_EQ(alone.missing_file, 1u);

  // A writer with bytes in the FIFO (the test holds both ends): they are all still there after.
  UniqueFd both(open(fifo.c_str(), O_RDWR | O_NONBLOCK));
  ASSERT_TRUE(both.valid()) << strerror(errno);
  const std::string payload = "\x7f" "ELF payload";
  ASSERT_EQ(write(both.get(), payload.data(), payload.size()), static_cast<ssize_t>(payload.size()));
  FifoLookup fed = resolve_in_fifo(fifo);
  EXPECT_FALSE(fed.needed_a_writer);
  EXPECT_LT(fed.took, kReturnsAtOnce) << ms(fed.took) << " ms";
  EXPECT_EQ(fed.frame.sym, nullptr);
  EXPECT_EQ(fed.missing_file, 1u);
  int unread = -1;
  ASSERT_EQ(ioctl(both.get(), FIONREAD, &unread), 0) << strerror(errno);
  EXPECT_EQ(unread, static_cast<int>(payload.size())) << "the symbolizer read from " << fifo;
  std::string back(payload.size(), '\0');
  EXPECT_EQ(read(both.get(), back.data(), back.size()), static_cast<ssize_t>(payload.size()));
  EXPECT_EQ(back, payload);
}

TEST(Symbolizer, ResolveCachedCountsEveryUseAndForgetsOnNewMaps) {
  ElfFile elf = open_elf(kWorkloads + "wl_condvar");
  Symbolizer s;
  s.observe(exec_mapping(1, elf, 0));
  Callchain c;
  c.push(address_of(elf, "wl_wait_for_signal", 0), FrameContext::kUser);
  c.push(0x10, FrameContext::kUser);
  const auto& a = s.resolve_cached(1, c);
  const auto& b = s.resolve_cached(1, c);
  EXPECT_EQ(&a, &b);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].sym->name, "wl_wait_for_signal");
  EXPECT_EQ(s.stats().frames, 4u);
  EXPECT_EQ(s.stats().unknown_map, 2u);
  Mmap2Record m = exec_mapping(1, elf, 0);
  m.filename = "//anon";  // JIT code over the same range: perf's /tmp/perf-1.map
  s.observe(m);
  auto after = s.resolve(1, c);
  EXPECT_EQ(after[0].dso, "/tmp/perf-1.map");
  EXPECT_EQ(after[0].sym, nullptr);
}

}  // namespace
}  // namespace offwake::symbolize
