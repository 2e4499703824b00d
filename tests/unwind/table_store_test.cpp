// Tables in the walker's memory and the mappings that point at them: what the BPF walker
// reads, checked from user space. A pc of this very process (a function of libc) must find,
// through its mapping's bias, the row the table gives for the same function's ELF address;
// tables are shared by build id, bounded by their memory (a binary that does not fit is
// counted and named), and a process's mappings follow exec, fork and exit.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <random>
#include <set>

#include "synth/elf_file.h"
#include "synth/proc_maps.h"
#include "unwind/process_mappings.h"
#include "unwind/table_store.h"

namespace offwake::test {
namespace {

using unwind::BinaryRef;
using unwind::CodeMapping;
using unwind::ProcessMappings;
using unwind::TableStore;

const std::string kLibc = "/lib/x86_64-linux-gnu/libc.so.6";
const std::string kPython = "/usr/bin/python3.11";

BinaryRef binary(const std::string& path) {
  BinaryRef b;
  b.path = b.open_path = path;
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  b.dev = st.st_dev;
  b.ino = st.st_ino;
  return b;
}

// This process's executable mappings of libc, as the recorder reads them from /proc.
std::vector<CodeMapping> own_libc_mappings() {
  auto maps = read_proc_maps(getpid());
  EXPECT_TRUE(static_cast<bool>(maps));
  std::vector<CodeMapping> out;
  for (const auto& m : *maps)
    if (m.perms.size() > 2 && m.perms[2] == 'x' && m.path.find("/libc.so.6") != std::string::npos)
      out.push_back({m.start, m.end, m.pgoff, 0, binary(m.path)});
  return out;
}

// What ProcessMappings publishes, kept as the BPF map would keep it: by tgid, removed at null.
ProcessMappings::PublishFn publish_into(std::map<uint32_t, offwake_unwind_process>& published) {
  return [&published](uint32_t tgid, const offwake_unwind_process* v) {
    if (v)
      published[tgid] = *v;
    else
      published.erase(tgid);
  };
}

TEST(TableStore, APcOfThisProcessFindsTheRowOfItsFunction) {
  std::vector<offwake_unwind_row> memory(1 << 20);
  TableStore store(memory);
  offwake_unwind_process value{};
  ProcessMappings procs(store, [&](uint32_t, const offwake_unwind_process* v) { value = v ? *v : offwake_unwind_process{}; });
  auto libc = own_libc_mappings();
  ASSERT_EQ(libc.size(), 1u);
  procs.map_all(1, libc);
  ASSERT_EQ(value.n, 1u);

  auto elf = ElfFile::open(libc[0].binary.path);
  ASSERT_TRUE(static_cast<bool>(elf));
  const unwind::StoredTable* t = store.get(libc[0].binary);
  ASSERT_GT(t->rows, 20000u) << t->why;
  for (const char* fn : {"read", "write", "nanosleep", "pthread_cond_wait", "epoll_wait", "__libc_start_main"}) {
    SCOPED_TRACE(fn);
    auto sym = elf->find_function(fn);
    ASSERT_TRUE(sym.has_value());
    // libc's own function, not an interceptor of the same name (the sanitizer build has them).
    void* libc_handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(libc_handle, nullptr);
    void* addr = dlsym(libc_handle, fn);
    dlclose(libc_handle);
    ASSERT_NE(addr, nullptr);
    // The walker's way: the mapping, its bias, the row in shared memory.
    for (uint64_t off : {uint64_t{0}, uint64_t{4}, sym->size ? sym->size - 1 : 0}) {
      const uint64_t pc = reinterpret_cast<uint64_t>(addr) + off;
      const offwake_unwind_mapping* m = offwake_unwind_find_mapping(&value, pc);
      ASSERT_NE(m, nullptr);
      long i = offwake_unwind_search(memory.data() + m->first_row, m->rows, static_cast<uint32_t>(pc - m->bias));
      ASSERT_GE(i, 0);
      // The table's way: the ELF address.
      uint32_t rebuilt = 0;
      auto fresh = unwind::build_unwind_table(kLibc);
      ASSERT_TRUE(static_cast<bool>(fresh));
      rebuilt = fresh->rule_at(sym->value + off);
      EXPECT_EQ(memory[m->first_row + static_cast<uint32_t>(i)].rule, rebuilt) << "offset " << off;
    }
  }
}

TEST(TableStore, OneTableABinaryWhateverNamesIt) {
  std::vector<offwake_unwind_row> memory(1 << 20);
  TableStore store(memory);
  BinaryRef by_path = binary(kLibc);
  const unwind::StoredTable* a = store.get(by_path);
  ASSERT_GT(a->rows, 0u);
  BinaryRef by_id;  // as an MMAP2 record with a build id names it: no inode
  by_id.path = by_id.open_path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  by_id.build_id = a->table.build_id;
  EXPECT_EQ(store.get(by_id), a);
  EXPECT_EQ(store.stats().tables, 1u);
  EXPECT_EQ(store.bytes(), a->rows * sizeof(offwake_unwind_row));
  // Built several at once, in parallel: the same rows as one at a time.
  std::vector<offwake_unwind_row> memory2(1 << 20);
  TableStore parallel(memory2);
  parallel.prepare({binary(kPython), binary(kLibc), binary(kLibc)}, 2);
  EXPECT_EQ(parallel.stats().tables, 2u);
  const unwind::StoredTable* b = parallel.get(binary(kLibc));
  ASSERT_EQ(b->rows, a->rows);
  EXPECT_EQ(0, memcmp(memory.data() + a->first_row, memory2.data() + b->first_row, a->rows * sizeof(offwake_unwind_row)));
}

TEST(TableStore, ABinaryThatDoesNotFitIsCountedAndNamed) {
  std::vector<offwake_unwind_row> memory(40000);  // libc (28k rows) fits, python3.11 (64k) does not
  TableStore store(memory);
  EXPECT_GT(store.get(binary(kLibc))->rows, 0u);
  const unwind::StoredTable* py = store.get(binary(kPython));
  EXPECT_EQ(py->rows, 0u);
  EXPECT_EQ(store.stats().too_large, 1u);
  ASSERT_EQ(store.stats().failed.size(), 1u);
  EXPECT_NE(store.stats().failed[0].find(kPython), std::string::npos) << store.stats().failed[0];
  EXPECT_NE(store.stats().failed[0].find("--unwind-memory"), std::string::npos);
  // Not retried, and the mapping has no table: frame pointers there.
  EXPECT_EQ(store.get(binary(kPython)), py);
  offwake_unwind_process v{};
  v.n = 99;
  ProcessMappings procs(store, [&](uint32_t, const offwake_unwind_process* p) { v = *p; });
  procs.map(1, {0x400000, 0x500000, 0x1000, 0, binary(kPython)});
  procs.map(1, {0x600000, 0x700000, 0x1000, 0, binary(kPython)});  // a second write
  EXPECT_EQ(v.n, 0u);
  EXPECT_EQ(procs.stats().without_table, 2u);  // each mapping once, however often its process is written
  // An unreadable file too.
  EXPECT_EQ(store.get(binary("/proc/self/status"))->rows, 0u);
  EXPECT_EQ(store.stats().unreadable, 1u);
}

TEST(ProcessMappings, FollowExecForkAndExit) {
  std::vector<offwake_unwind_row> memory(1 << 20);
  TableStore store(memory);
  std::map<uint32_t, offwake_unwind_process> published;
  ProcessMappings procs(store, publish_into(published));
  auto libc = own_libc_mappings();
  ASSERT_EQ(libc.size(), 1u);
  // python3.11's code as a process maps it: from its executable segment's page.
  auto py_elf = ElfFile::open(kPython);
  ASSERT_TRUE(static_cast<bool>(py_elf));
  uint64_t code_offset = 0;
  for (const auto& seg : py_elf->segments())
    if (seg.executable) code_offset = seg.offset & ~uint64_t{0xfff};
  CodeMapping py{0x555500000000, 0x555500200000, code_offset, 100, binary(kPython)};
  procs.map(7, py);
  procs.map(7, libc[0]);
  ASSERT_EQ(published[7].n, 2u);
  EXPECT_LT(published[7].m[0].start, published[7].m[1].start);  // sorted for the search
  procs.fork(7, 8);
  EXPECT_EQ(published[8].n, 2u);
  // exec at time 200 drops what was mapped before it, keeps what came after (records of other
  // CPUs arrive in no order).
  CodeMapping after = py;
  after.time = 300;
  procs.map(8, after);
  procs.exec(8, 200);
  ASSERT_EQ(published[8].n, 1u);
  EXPECT_EQ(published[8].m[0].start, py.start);
  // A mapping over another replaces it.
  CodeMapping over = libc[0];
  over.start = py.start + 0x1000;
  over.end = py.start + 0x3000;
  over.time = 400;
  procs.map(8, over);
  ASSERT_EQ(published[8].n, 1u);
  EXPECT_EQ(published[8].m[0].start, over.start);
  procs.exit(7);
  EXPECT_EQ(published.count(7), 0u);
  EXPECT_EQ(published.count(8), 1u);
}

// A binary mapped during a recording has its table built beside it (TableBuilder): its process
// is published at once without it (frame pointers there, and `building` says so), and again
// with it once built, the
// rows those of a table built on the spot. A small binary is not held up behind a big one.
TEST(ProcessMappings, ATableBuiltBesideIsPublishedWhenReady) {
  std::vector<offwake_unwind_row> memory(1 << 20);
  TableStore store(memory);
  store.build_beside(2);
  std::map<uint32_t, offwake_unwind_process> published;
  ProcessMappings procs(store, publish_into(published));
  auto libc = own_libc_mappings();
  ASSERT_EQ(libc.size(), 1u);
  procs.map(7, libc[0]);
  procs.fork(7, 8);  // waits for the same table
  ASSERT_EQ(published.count(7), 1u);
  EXPECT_EQ(published[7].n, 0u);
  EXPECT_EQ(published[8].n, 0u);
  EXPECT_EQ(published[7].building, 1u);  // a command's blocks wait for it (user_await_tables)
  EXPECT_EQ(published[8].building, 1u);
  EXPECT_EQ(procs.stats().awaited, 2u);
  for (int i = 0; i < 2000 && !store.place_built(); ++i) usleep(1000);
  procs.resolve_awaiting();
  ASSERT_EQ(published[7].n, 1u);
  ASSERT_EQ(published[8].n, 1u);
  EXPECT_EQ(published[7].building, 0u);
  EXPECT_EQ(published[8].building, 0u);
  EXPECT_NE(published[7].generation, published[8].generation);
  EXPECT_GT(procs.stats().longest_wait_ns, 0u);
  EXPECT_EQ(store.stats().built_beside, 1u);
  // Ready from now on: a new mapping of it is published with its table at once.
  CodeMapping again = libc[0];
  again.time = 10;
  procs.map(9, again);
  EXPECT_EQ(published[9].n, 1u);
  EXPECT_EQ(published[9].building, 0u);
  // The same rows as built on the spot.
  std::vector<offwake_unwind_row> memory2(1 << 20);
  TableStore spot(memory2);
  const unwind::StoredTable* a = spot.get(libc[0].binary);
  ASSERT_EQ(published[7].m[0].rows, a->rows);
  EXPECT_EQ(0, memcmp(memory.data() + published[7].m[0].first_row, memory2.data() + a->first_row,
                      a->rows * sizeof(offwake_unwind_row)));
  EXPECT_EQ(published[7].m[0].bias, spot.get(libc[0].binary)->table.bias(libc[0].start, libc[0].pgoff));

  // python3.11 (64k rows) asked for first, libc (28k) after, on one thread: libc first.
  std::vector<offwake_unwind_row> memory3(1 << 20);
  TableStore one(memory3);
  one.build_beside(1);
  std::vector<std::string> order;
  EXPECT_EQ(one.ready_or_build(binary("/usr/bin/node")), nullptr);  // keeps the thread busy 150 ms
  usleep(50'000);  // taken by then: python and libc wait together (else python alone might be next)
  EXPECT_EQ(one.ready_or_build(binary(kPython)), nullptr);
  EXPECT_EQ(one.ready_or_build(binary(kLibc)), nullptr);
  const unwind::StoredTable* py = nullptr;
  const unwind::StoredTable* lc = nullptr;
  for (int i = 0; i < 5000 && !(py && lc); ++i) {
    one.place_built();
    if (!lc && (lc = one.ready_or_build(binary(kLibc)))) order.push_back("libc");
    if (!py && (py = one.ready_or_build(binary(kPython)))) order.push_back("python");
    usleep(1000);
  }
  ASSERT_TRUE(py && lc);
  EXPECT_EQ(order, (std::vector<std::string>{"libc", "python"}));
}

// Every value published has a generation of its own, never 0: the BPF walker caches rules by
// generation and pc, so a process whose mappings changed must never show an old one.
TEST(ProcessMappings, EveryPublicationHasANewGeneration) {
  std::vector<offwake_unwind_row> memory(1 << 20);
  TableStore store(memory);
  std::vector<uint32_t> generations;
  ProcessMappings procs(store, [&](uint32_t, const offwake_unwind_process* v) {
    if (v) generations.push_back(v->generation);
  });
  auto libc = own_libc_mappings();
  ASSERT_EQ(libc.size(), 1u);
  procs.map(7, libc[0]);
  procs.fork(7, 8);  // the same mappings, under another tgid: still a value of its own
  CodeMapping later = libc[0];
  later.time = 300;
  procs.map(8, later);  // replaces the same range: the same mappings again, a new value
  procs.exec(8, 400);
  ASSERT_EQ(generations.size(), 4u);
  std::set<uint32_t> distinct(generations.begin(), generations.end());
  EXPECT_EQ(distinct.size(), generations.size());
  EXPECT_EQ(distinct.count(0u), 0u);
  EXPECT_EQ(offwake_unwind_next_generation(0xffffffffu), 1u);  // 0 is skipped at the wrap
}

// The mapping search the walker runs, against a linear scan, on random layouts of up to the
// most mappings a process can have.
TEST(ProcessMappings, TheSearchFindsTheMappingOfEveryPc) {
  std::mt19937_64 rng(23);
  for (int round = 0; round < 200; ++round) {
    offwake_unwind_process p{};
    p.n = static_cast<uint32_t>(rng() % (OFFWAKE_UNWIND_MAX_MAPPINGS + 1));
    uint64_t at = 0x1000;
    for (uint32_t i = 0; i < p.n; ++i) {
      at += (rng() % 4) * 0x1000;  // gaps, or none
      p.m[i].start = at;
      at += 0x1000 + (rng() % 8) * 0x1000;
      p.m[i].end = at;
    }
    for (int k = 0; k < 200; ++k) {
      const uint64_t pc = rng() % (at + 0x2000);
      const offwake_unwind_mapping* want = nullptr;
      for (uint32_t i = 0; i < p.n; ++i)
        if (p.m[i].start <= pc && pc < p.m[i].end) want = &p.m[i];
      ASSERT_EQ(offwake_unwind_find_mapping(&p, pc), want) << "n=" << p.n << " pc=" << pc;
    }
  }
}

}  // namespace
}  // namespace offwake::test
