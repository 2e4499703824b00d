// As root: the Symbolizer against the real perf (Debian's perf 6.1). The same perf.data goes
// through `perf script -s frames.py` (perf's Python frames: ip, sym name/start/end, dso) and
// through PerfDataReader + Symbolizer printed the same way; the outputs must be equal.
//  - recordings by `perf offwake record` of the workloads (threads, exec, libc, kernel);
//  - a written file that probes many addresses: the start, second byte, last byte and first
//    byte after symbols of a PIE (symbols_target, live), this test's own binary (C++ names)
//    and libraries (libc via its debug file, libstdc++), a non-PIE workload, the kernel.
//    The PLT is left out (see probes()).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "perfdata/reader.h"
#include "perfdata/writer.h"
#include "support/live_target.h"
#include "support/paths.h"
#include "support/run.h"
#include "support/test_events.h"
#include "symbolize/dso.h"
#include "symbolize/symbolizer.h"
#include "synth/elf_file.h"
#include "synth/host_info.h"
#include "synth/kernel_maps.h"
#include "synth/proc_maps.h"

namespace offwake::symbolize {
namespace {

using namespace perfdata;

using test::kOffwake;
using test::kWorkloads;
const std::string& kPieTarget = test::kSymbolsTarget;
const std::string kFramesPy = OFFWAKE_SOURCE_DIR "/tests/symbolize/frames.py";

std::string hex(uint64_t v) {
  std::ostringstream o;
  o << std::hex << v;
  return o.str();
}

// The file's samples, printed as frames.py prints perf's.
std::string symbolize_file(const std::string& path, Symbolizer::Stats* stats = nullptr) {
  auto r = PerfDataReader::open(path);
  if (!r) return "open failed: " + r.error().message();
  Symbolizer s;
  s.add_build_ids(r->info().build_ids);
  std::string out;
  for (;;) {
    auto rec = r->next();
    if (!rec) return out + "read failed: " + rec.error().message();
    if (!rec->has_value()) break;
    const Record& record = **rec;
    auto* sample = std::get_if<SampleRecord>(&record);
    if (!sample) {
      s.observe(record);
      continue;
    }
    const EventDesc* ev = r->event_for(*sample);
    out += "S " + (s.has_comm(sample->tid) ? s.comm(sample->tid) : ":" + std::to_string(sample->tid)) + " " +
           std::to_string(sample->pid) + " " + std::to_string(sample->tid) + " " + (ev ? ev->name : "?") + "\n";
    for (const ResolvedFrame& f : s.resolve_cached(sample->pid, sample->callchain)) {
      out += hex(f.ip) + "|";
      out += f.sym ? f.sym->name + "|" + hex(f.sym->start) + "|" + hex(f.sym->end) : "-|-|-";
      out += "|" + (f.mapped ? f.dso : "-") + "\n";
    }
  }
  if (stats) *stats = s.stats();
  return out;
}

// Samples as sorted blocks: perf orders samples by time, ties in its own way.
std::vector<std::string> blocks(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("S ", 0) == 0 || out.empty()) out.emplace_back();
    out.back() += line + "\n";
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expect_same_as_perf(const std::string& data) {
  auto perf = test::run("perf script -i " + data + " -s " + kFramesPy);
  ASSERT_EQ(perf.status, 0) << perf.err;
  auto theirs = blocks(perf.out);
  auto ours = blocks(symbolize_file(data));
  ASSERT_FALSE(theirs.empty());
  EXPECT_EQ(ours.size(), theirs.size());
  size_t shown = 0;
  for (size_t i = 0; i < std::min(ours.size(), theirs.size()) && shown < 5; ++i) {
    if (ours[i] != theirs[i]) {
      ++shown;
      std::istringstream a(theirs[i]), b(ours[i]);
      std::string la, lb, diff;
      while (static_cast<bool>(std::getline(a, la)) | static_cast<bool>(std::getline(b, lb))) {
        if (la != lb) diff += "perf: " + la + "\nours: " + lb + "\n";
        la.clear();
        lb.clear();
      }
      ADD_FAILURE() << "sample " << theirs[i].substr(0, theirs[i].find('\n')) << " differs:\n" << diff;
    }
  }
}

bool root() { return geteuid() == 0; }

TEST(SymbolizeLikePerf, RecordedWorkloads) {
  if (!root()) GTEST_SKIP() << "needs root to record";
  test::TempDir dir;
  for (const char* wl : {"wl_condvar", "wl_pipe"}) {
    const std::string data = dir.file(std::string(wl) + ".data");
    auto rec = test::run(kOffwake + " record -q -o " + data + " -- " + kWorkloads + wl);
    ASSERT_EQ(rec.status, 0) << rec.err;
    SCOPED_TRACE(wl);
    expect_same_as_perf(data);
    Symbolizer::Stats st;
    std::string text = symbolize_file(data, &st);
    EXPECT_NE(text.find(std::string("|") + (std::string(wl) == "wl_pipe" ? "wl_wait_for_message" : "wl_wait_for_signal") + "|"),
              std::string::npos)
        << text;
    EXPECT_GT(st.frames, 0u);
  }
}

EventDesc probe_event() { return test::callchain_event("probe"); }

// Addresses around the symbols of a DSO: first, second and last byte, and the one after.
std::vector<uint64_t> probes(const SymbolTable& table, uint64_t lo, uint64_t hi, size_t want) {
  std::vector<uint64_t> out;
  const auto& syms = table.symbols();
  std::vector<const Symbol*> in;
  // Not the PLT: perf's "name@plt" symbols overlap _init's fixed-up end, and which of two
  // overlapping symbols perf's rbtree search meets first depends on the tree's shape.
  for (const Symbol& s : syms)
    if (s.start >= lo && s.end <= hi && s.name != "_init" && !s.name.ends_with("@plt")) in.push_back(&s);
  const size_t step = std::max<size_t>(1, in.size() / want);
  for (size_t i = 0; i < in.size(); i += step)
    for (uint64_t a : {in[i]->start, in[i]->start + 1, in[i]->end - 1, in[i]->end}) out.push_back(a);
  return out;
}

TEST(SymbolizeLikePerf, ProbedAddresses) {
  if (!root()) GTEST_SKIP() << "needs root for kallsyms addresses";
  test::TempDir dir;
  const std::string data = dir.file("probe.data");
  test::LiveTarget target;
  auto w = PerfDataWriter::create_file(data, {probe_event()}, collect_host_info({"probe"}));
  ASSERT_TRUE(w.ok()) << w.error().message();
  auto kallsyms = Kallsyms::load();
  ASSERT_TRUE(kallsyms.ok());
  auto kmap = kernel_mmap(*kallsyms);
  ASSERT_TRUE(kmap.ok());
  ASSERT_TRUE(w->write(*kmap).ok());
  w->add_build_id(kernel_build_id_entry());

  struct Target {
    uint32_t pid;
    std::vector<uint64_t> ips;
    FrameContext context;
  };
  std::vector<Target> targets;
  BuildIdCache cache;
  for (pid_t pid : {target.pid(), getpid()}) {
    Target t{static_cast<uint32_t>(pid), {}, FrameContext::kUser};
    auto st = synthesize_process(pid, cache, [&](const Record& r) {
      if (auto* m = std::get_if<Mmap2Record>(&r); m && m->filename[0] == '/') {
        Dso dso(m->filename, m->build_id, DsoKind::kElf);
        for (uint64_t a : probes(dso.table(), m->pgoff, m->pgoff + m->len, 150)) t.ips.push_back(m->start + a - m->pgoff);
      }
      return w->write(r);
    });
    ASSERT_TRUE(st.ok()) << st.error().message();
    targets.push_back(std::move(t));
  }
  {  // a non-PIE workload in a made-up process
    auto elf = ElfFile::open(kWorkloads + "wl_condvar");
    ASSERT_TRUE(elf.ok());
    const uint32_t pid = 4000000;
    ASSERT_TRUE(w->write(CommRecord{pid, pid, "wl_condvar", true, {}}).ok());
    for (const auto& seg : elf->segments()) {
      if (!seg.executable) continue;
      Mmap2Record m;
      m.pid = m.tid = pid;
      m.start = seg.vaddr & ~uint64_t{4095};
      m.pgoff = seg.offset & ~uint64_t{4095};
      m.len = ((seg.vaddr + seg.memsz + 4095) & ~uint64_t{4095}) - m.start;
      m.build_id = elf->build_id();
      m.prot = 5;
      m.filename = elf->path();
      ASSERT_TRUE(w->write(m).ok());
      Dso dso(m.filename, m.build_id, DsoKind::kElf);
      Target t{pid, {}, FrameContext::kUser};
      for (uint64_t a : probes(dso.table(), m.pgoff, m.pgoff + m.len, 100)) t.ips.push_back(m.start + a - m.pgoff);
      t.ips.push_back(m.start + m.len + 0x100000);  // no mapping
      targets.push_back(std::move(t));
    }
  }
  {  // the kernel, in the target's samples
    Dso kernel("[kernel.kallsyms]", {}, DsoKind::kKernel);
    Target t{static_cast<uint32_t>(target.pid()), probes(kernel.table(), kmap->start, ~uint64_t{0}, 1500),
             FrameContext::kKernel};
    targets.push_back(std::move(t));
  }
  ASSERT_TRUE(w->finished_init().ok());
  uint64_t time = 1'000'000;
  for (const Target& t : targets) {
    for (size_t i = 0; i < t.ips.size(); i += 50) {
      SampleRecord s;
      s.id = 1;
      s.pid = s.tid = t.pid;
      s.time = ++time;
      s.period = 1;
      for (size_t j = i; j < std::min(i + 50, t.ips.size()); ++j) s.callchain.push(t.ips[j], t.context);
      s.ip = s.callchain.frames().front().ip;
      ASSERT_TRUE(w->write(s).ok());
    }
  }
  ASSERT_TRUE(w->close().ok());
  expect_same_as_perf(data);
}

}  // namespace
}  // namespace offwake::symbolize
