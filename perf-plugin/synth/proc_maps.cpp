#include "synth/proc_maps.h"

#include <dirent.h>
#include <sys/mman.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "synth/elf_file.h"

namespace offwake {

namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

std::vector<pid_t> numeric_entries(const std::string& dir) {
  std::vector<pid_t> out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return out;
  while (dirent* e = readdir(d.get())) {
    char* end = nullptr;
    long v = strtol(e->d_name, &end, 10);
    if (end && *end == '\0' && v > 0) out.push_back(static_cast<pid_t>(v));
  }
  return out;
}

}  // namespace

std::vector<pid_t> list_processes() { return numeric_entries("/proc"); }

Result<std::vector<ProcMapping>> read_proc_maps(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/maps";
  std::ifstream in(path);
  if (!in) return Error::from_errno("opening " + path);
  std::vector<ProcMapping> out;
  std::string line;
  while (std::getline(in, line)) {
    ProcMapping m;
    char perms[8] = {};
    unsigned maj = 0, min = 0;
    unsigned long long start, end, off, ino;
    int name_at = 0;
    if (sscanf(line.c_str(), "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min,
               &ino, &name_at) < 7)
      continue;
    m.start = start;
    m.end = end;
    m.pgoff = off;
    m.maj = maj;
    m.min = min;
    m.ino = ino;
    m.perms = perms;
    if (name_at > 0 && static_cast<size_t>(name_at) <= line.size()) m.path = line.substr(name_at);
    out.push_back(std::move(m));
  }
  return out;
}

perfdata::BuildId BuildIdCache::get(const std::string& path) {
  auto it = cache_.find(path);
  if (it != cache_.end()) return it->second;
  perfdata::BuildId id;
  if (auto elf = ElfFile::open(path)) id = elf->build_id();
  cache_.emplace(path, id);
  return id;
}

Status synthesize_process(pid_t pid, BuildIdCache& build_ids, const RecordCallback& emit) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::vector<pid_t> tids = numeric_entries(proc + "/task");
  if (tids.empty()) return ok_status();  // gone, or a kernel-side race: nothing to describe
  for (pid_t tid : tids) {
    perfdata::CommRecord c;
    c.pid = static_cast<uint32_t>(pid);
    c.tid = static_cast<uint32_t>(tid);
    c.comm = read_first_line(proc + "/task/" + std::to_string(tid) + "/comm");
    c.sample_id.pid = c.pid;
    c.sample_id.tid = c.tid;
    if (c.comm.empty()) continue;
    if (tid != pid) {
      perfdata::TaskRecord f;
      f.pid = f.ppid = static_cast<uint32_t>(pid);
      f.tid = static_cast<uint32_t>(tid);
      f.ptid = static_cast<uint32_t>(pid);
      f.sample_id = c.sample_id;
      OFFWAKE_TRY(emit(f));
    }
    OFFWAKE_TRY(emit(c));
  }
  auto maps = read_proc_maps(pid);
  if (!maps) return ok_status();  // exited meanwhile
  for (const auto& m : *maps) {
    if (m.perms.size() < 3 || m.perms[2] != 'x') continue;
    perfdata::Mmap2Record r;
    r.pid = r.tid = static_cast<uint32_t>(pid);
    r.start = m.start;
    r.len = m.end - m.start;
    r.pgoff = m.pgoff;
    r.prot = (m.perms[0] == 'r' ? PROT_READ : 0) | (m.perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
    r.flags = m.perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
    r.filename = m.path.empty() ? "//anon" : m.path;
    if (!m.path.empty() && m.path[0] == '/') r.build_id = build_ids.get(m.path);
    if (r.build_id.empty()) {
      r.maj = m.maj;
      r.min = m.min;
      r.ino = m.ino;
    }
    r.sample_id.pid = r.pid;
    r.sample_id.tid = r.tid;
    OFFWAKE_TRY(emit(r));
  }
  return ok_status();
}

Status synthesize_all_processes(BuildIdCache& build_ids, const RecordCallback& emit) {
  for (pid_t pid : list_processes()) OFFWAKE_TRY(synthesize_process(pid, build_ids, emit));
  return ok_status();
}

}  // namespace offwake
