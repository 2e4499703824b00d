#include "record/user_unwind.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "synth/elf_file.h"
#include "synth/proc_maps.h"
#include "unwind/mapped_files.h"
#include "util/clock.h"

namespace offwake {
namespace {

bool is_file(const std::string& path) { return !path.empty() && path[0] == '/'; }

}  // namespace

UserUnwind::UserUnwind(bpf::UnwindMaps maps, std::function<bool(uint32_t)> is_target)
    : maps_(std::move(maps)),
      is_target_(std::move(is_target)),
      tables_(maps_.rows()),
      processes_(tables_, [this](uint32_t tgid, const offwake_unwind_process* v) { maps_.publish(tgid, v); }) {
  // Two threads at least: a small binary is not held up behind a big one (node's, 150 ms).
  tables_.build_beside(std::clamp(std::thread::hardware_concurrency(), 2u, 4u));
}

void UserUnwind::add_process(uint32_t pid, std::vector<unwind::CodeMapping>& out) const {
  auto maps = read_proc_maps(static_cast<pid_t>(pid));
  if (!maps) return;  // gone, or a kernel thread: nothing to walk
  for (const ProcMapping& m : *maps) {
    if (m.perms.size() < 3 || m.perms[2] != 'x' || !is_file(m.path)) continue;
    unwind::CodeMapping c{m.start, m.end, m.pgoff, 0, {}};
    c.binary.path = m.path;
    c.binary.open_path = unwind::live_file_path(pid, m.path, m.start, m.end);
    c.binary.dev = makedev(m.maj, m.min);
    c.binary.ino = m.ino;
    out.push_back(std::move(c));
  }
}

// Tables for all the code these processes map now, every binary once, built by `threads`.
void UserUnwind::map_processes(const std::vector<uint32_t>& pids, unsigned threads) {
  std::vector<std::pair<uint32_t, std::vector<unwind::CodeMapping>>> procs;
  for (uint32_t pid : pids) {
    procs.emplace_back(pid, std::vector<unwind::CodeMapping>{});
    add_process(pid, procs.back().second);
  }
  std::vector<unwind::BinaryRef> binaries;
  for (const auto& [pid, ms] : procs)
    for (const auto& m : ms) binaries.push_back(m.binary);
  tables_.prepare(binaries, threads);
  for (const auto& [pid, ms] : procs)
    if (!ms.empty()) processes_.map_all(pid, ms);
}

void UserUnwind::seed(const std::vector<uint32_t>& pids, bool all) {
  const uint64_t t0 = steady_ns();
  std::vector<uint32_t> targets = pids;
  if (all)
    for (pid_t pid : list_processes()) targets.push_back(static_cast<uint32_t>(pid));
  // On every CPU: the set-up of a system-wide recording.
  map_processes(targets, std::max(1u, std::thread::hardware_concurrency()));
  setup_ns_ += steady_ns() - t0;
}

void UserUnwind::prepare_command(const std::string& path) {
  const uint64_t t0 = steady_ns();
  std::vector<std::string> files = {path};
  std::set<std::string> seen = {path};
  // Breadth first through DT_NEEDED, as far as the libraries are found.
  for (size_t i = 0; i < files.size() && files.size() < 64; ++i) {
    auto elf = ElfFile::open(files[i]);
    if (!elf) continue;
    std::vector<std::string> next;
    if (!elf->interpreter().empty()) next.push_back(elf->interpreter());
    for (const std::string& soname : elf->needed())
      for (const char* dir : {"/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib64/", "/usr/lib/"}) {
        struct stat st;
        if (stat((dir + soname).c_str(), &st) == 0) {
          next.push_back(dir + soname);
          break;
        }
      }
    for (auto& f : next)
      if (seen.insert(f).second) files.push_back(f);
  }
  std::vector<unwind::BinaryRef> binaries;
  for (const std::string& f : files) {
    struct stat st;
    if (stat(f.c_str(), &st) != 0) continue;
    unwind::BinaryRef b;
    // By the name the kernel gives it in MMAP2 records, through every symbolic link (/usr/bin/sh
    // is dash, /lib is /usr/lib): a table under another name is built again.
    std::unique_ptr<char, decltype(&free)> real(realpath(f.c_str(), nullptr), &free);
    b.path = b.open_path = real ? real.get() : f;
    b.dev = st.st_dev;
    b.ino = st.st_ino;
    binaries.push_back(std::move(b));
  }
  tables_.prepare(binaries, std::max(1u, std::thread::hardware_concurrency()));
  setup_ns_ += steady_ns() - t0;
}

// A request is removed once served: a process that has tables then asks no more, one that
// cannot have them (gone) asks again, in vain. The targets ask too, in their first
// milliseconds, before their MMAP2 records are read: they are followed already.
void UserUnwind::serve_requests() {
  std::vector<uint32_t> asking;
  for (uint32_t pid : maps_.requests()) {
    maps_.forget_request(pid);
    if (followed(pid)) continue;
    asked_.insert(pid);
    asking.push_back(pid);
  }
  if (asking.empty()) return;
  const uint64_t t0 = steady_ns();
  map_processes(asking, 1);  // on the recorder's thread, between its reads
  on_request_ += asking.size();
  request_ns_ += steady_ns() - t0;
}

void UserUnwind::publish_built(bool all) {
  if (tables_.place_built(all)) processes_.resolve_awaiting();
}

void UserUnwind::tracking(const perfdata::Record& r) {
  if (const auto* m = std::get_if<perfdata::Mmap2Record>(&r)) {
    if (!(m->prot & PROT_EXEC) || !is_file(m->filename) || !followed(m->pid)) return;
    unwind::CodeMapping c{m->start, m->start + m->len, m->pgoff, m->sample_id.time, {}};
    c.binary.path = m->filename;
    c.binary.open_path = unwind::live_file_path(m->pid, m->filename, m->start, m->start + m->len);
    c.binary.build_id = m->build_id;
    c.binary.dev = makedev(m->maj, m->min);
    c.binary.ino = m->ino;
    processes_.map(m->pid, c);
  } else if (const auto* c = std::get_if<perfdata::CommRecord>(&r)) {
    if (c->exec && c->pid == c->tid) processes_.exec(c->pid, c->sample_id.time);
  } else if (const auto* t = std::get_if<perfdata::TaskRecord>(&r)) {
    if (t->pid != t->tid) return;  // a thread: its process's mappings serve it
    if (t->exit) {
      processes_.exit(t->pid);
      asked_.erase(t->pid);
    } else if (t->pid != t->ppid) {
      processes_.fork(t->ppid, t->pid);
      if (asked_.count(t->ppid)) asked_.insert(t->pid);  // it has its parent's tables: followed too
    }
  }
}

RecordStats::Unwind UserUnwind::stats() const {
  const auto& t = tables_.stats();
  const auto& p = processes_.stats();
  RecordStats::Unwind u;
  u.used = true;
  u.tables = t.tables;
  u.bytes = tables_.bytes();
  u.capacity_bytes = tables_.capacity_bytes();
  u.setup_ns = setup_ns_;
  u.build_ns = t.build_ns;
  u.no_rows = t.no_rows;
  u.unreadable = t.unreadable;
  u.too_large = t.too_large;
  u.processes = p.processes;
  u.mappings = p.mappings;
  u.mappings_without_table = p.without_table;
  u.mappings_over_limit = p.over_limit;
  u.publish_failures = maps_.publish_failures();
  u.built_beside = t.built_beside;
  u.processes_awaiting_table = p.awaited;
  u.longest_table_wait_ns = p.longest_wait_ns;
  u.processes_on_request = on_request_;
  u.request_ns = request_ns_;
  u.failed = t.failed;
  return u;
}

}  // namespace offwake
