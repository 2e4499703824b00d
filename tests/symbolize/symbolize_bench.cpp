// Benchmark: 1,000,000 samples over 10,000 distinct stacks of 15-30 frames, built from real
// code on this machine (the kernel via /proc/kallsyms, libc and the test workloads mapped as
// in this process), symbolized by Symbolizer::resolve_cached. Prints the time; exits non-zero
// only if a few known frames resolve wrongly (it is not a timed test).
//
//   build/dev/tests/symbolize/symbolize_bench [samples] [stacks]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "perfdata/records.h"
#include "symbolize/dso.h"
#include "symbolize/symbolizer.h"
#include "synth/elf_file.h"
#include "synth/kernel_maps.h"
#include "synth/proc_maps.h"
#include "support/paths.h"

using namespace offwake;
using namespace offwake::symbolize;

namespace {

using offwake::test::kWorkloads;

struct Known {
  uint64_t ip;
  std::string name;
};

// Function addresses of one mapped DSO: runtime ip of each function's start + 1.
std::vector<Known> functions_of(const perfdata::Mmap2Record& m) {
  Dso dso(m.filename, m.build_id, DsoKind::kElf);
  std::vector<Known> out;
  for (const Symbol& s : dso.table().symbols()) {
    if (s.start < m.pgoff || s.start + 1 >= m.pgoff + m.len || s.end <= s.start + 1) continue;
    out.push_back({m.start + (s.start - m.pgoff) + 1, s.name});
  }
  return out;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "symbolize_bench: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n_samples = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const size_t n_stacks = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10'000;
  std::mt19937_64 rng(42);

  // The records a recording would hold: the kernel, and four processes that each map this
  // process's libraries plus one non-PIE workload.
  std::vector<perfdata::Record> records;
  auto kallsyms = Kallsyms::load();
  if (!kallsyms) return fail(kallsyms.error().message());
  auto kmap = kernel_mmap(*kallsyms);
  if (!kmap) return fail(kmap.error().message());
  records.push_back(*kmap);

  std::vector<perfdata::Mmap2Record> own;
  BuildIdCache cache;
  auto st = synthesize_process(getpid(), cache, [&](const perfdata::Record& r) {
    if (auto* m = std::get_if<perfdata::Mmap2Record>(&r); m && m->filename.find(".so") != std::string::npos)
      own.push_back(*m);
    return ok_status();
  });
  if (!st) return fail(st.error().message());

  const std::vector<std::string> workloads = {"wl_condvar", "wl_pipe", "wl_sleep", "wl_spin_block"};
  std::vector<uint32_t> pids;
  std::vector<std::vector<Known>> user_pool;  // per pid
  for (size_t i = 0; i < workloads.size(); ++i) {
    const uint32_t pid = 1000 + static_cast<uint32_t>(i);
    pids.push_back(pid);
    records.push_back(perfdata::CommRecord{pid, pid, workloads[i], true, {}});
    std::vector<Known> pool;
    auto elf = ElfFile::open(kWorkloads + workloads[i]);
    if (!elf) return fail(elf.error().message());
    for (const auto& seg : elf->segments()) {
      if (!seg.executable) continue;
      perfdata::Mmap2Record m;
      m.pid = m.tid = pid;
      m.start = seg.vaddr & ~uint64_t{4095};
      m.pgoff = seg.offset & ~uint64_t{4095};
      m.len = ((seg.vaddr + seg.memsz + 4095) & ~uint64_t{4095}) - m.start;
      m.build_id = elf->build_id();
      m.filename = elf->path();
      records.push_back(m);
      for (auto& k : functions_of(m)) pool.push_back(k);
    }
    for (perfdata::Mmap2Record m : own) {
      m.pid = m.tid = pid;
      records.push_back(m);
      for (auto& k : functions_of(m)) pool.push_back(k);
    }
    user_pool.push_back(std::move(pool));
  }
  // Kernel pool: every 7th symbol of /proc/kallsyms that is code of the kernel image.
  std::vector<Known> kernel_pool;
  {
    Dso kernel("[kernel.kallsyms]", {}, DsoKind::kKernel);
    const auto& syms = kernel.table().symbols();
    for (size_t i = 0; i < syms.size(); i += 7)
      if (syms[i].start >= kmap->start && syms[i].end > syms[i].start + 1 && syms[i].end - syms[i].start < 65536)
        kernel_pool.push_back({syms[i].start + 1, syms[i].name});
  }

  // Distinct stacks: 5-12 kernel frames over 10-18 user frames, each with its process.
  struct Stack {
    uint32_t pid;
    Callchain chain;
  };
  std::vector<Stack> stacks(n_stacks);
  size_t frames_total = 0;
  for (size_t i = 0; i < n_stacks; ++i) {
    size_t p = rng() % pids.size();
    stacks[i].pid = pids[p];
    size_t nk = 5 + rng() % 8, nu = 10 + rng() % 9;
    for (size_t k = 0; k < nk; ++k) stacks[i].chain.push(kernel_pool[rng() % kernel_pool.size()].ip, FrameContext::kKernel);
    for (size_t u = 0; u < nu; ++u) {
      const auto& pool = user_pool[p];
      stacks[i].chain.push(pool[rng() % pool.size()].ip, FrameContext::kUser);
    }
    frames_total += nk + nu;
  }
  // Samples: a skewed choice of stack, as profiles are.
  std::vector<uint32_t> order(n_samples);
  std::geometric_distribution<uint32_t> skew(3.0 / static_cast<double>(n_stacks));
  for (auto& o : order) o = skew(rng) % static_cast<uint32_t>(n_stacks);
  for (size_t i = 0; i < n_stacks && i < n_samples; ++i) order[i] = static_cast<uint32_t>(i);  // every stack once

  auto t0 = std::chrono::steady_clock::now();
  Symbolizer s;
  for (const auto& r : records) s.observe(r);
  uint64_t checksum = 0, frames = 0;
  for (uint32_t idx : order) {
    const auto& resolved = s.resolve_cached(stacks[idx].pid, stacks[idx].chain);
    for (const auto& f : resolved) checksum += f.sym ? f.sym->start + f.sym->name.size() : 1;
    frames += resolved.size();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("symbolized %zu samples (%zu distinct stacks, %llu frames, %zu in the distinct stacks) in %.2f s\n",
              n_samples, n_stacks, static_cast<unsigned long long>(frames), frames_total, secs);
  const auto& st2 = s.stats();
  std::printf("frames %llu, unknown map %llu, unknown symbol %llu, build id mismatch %llu, missing file %llu (checksum %llx)\n",
              (unsigned long long)st2.frames, (unsigned long long)st2.unknown_map,
              (unsigned long long)st2.unknown_symbol, (unsigned long long)st2.build_id_mismatch,
              (unsigned long long)st2.missing_file, (unsigned long long)checksum);

  // Correctness of a few frames: the pools' names come from the same tables, so compare with
  // names read independently (ElfFile for the workloads, Kallsyms for the kernel).
  auto sched = kallsyms->address_of("schedule");
  if (!sched) return fail("no schedule in kallsyms");
  auto kf = s.resolve(pids[0], *sched + 2, FrameContext::kKernel);
  if (!kf.sym || kf.sym->name != "schedule") return fail("kernel frame schedule misnamed");
  auto wl = ElfFile::open(kWorkloads + "wl_condvar");
  auto fn = wl->find_function("wl_wait_for_signal");
  auto uf = s.resolve(pids[0], fn->value + 3, FrameContext::kUser);
  if (!uf.sym || uf.sym->name != "wl_wait_for_signal") return fail("user frame wl_wait_for_signal misnamed");
  auto libc = s.resolve(pids[0], reinterpret_cast<uint64_t>(&::getpid) + 1, FrameContext::kUser);
  if (!libc.sym || libc.sym->name.find("getpid") == std::string::npos) return fail("libc frame getpid misnamed");
  if (st2.unknown_symbol + st2.unknown_map + st2.missing_file + st2.build_id_mismatch != 0)
    return fail("frames left unknown");
  return 0;
}
