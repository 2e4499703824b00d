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

std::vector<std::string> MappedFile::sources() const {
  char range[64];
  snprintf(range, sizeof range, "%llx-%llx", static_cast<unsigned long long>(start),
           static_cast<unsigned long long>(end));
  const std::string proc = "/proc/" + std::to_string(pid);
  return {proc + "/map_files/" + range, proc + "/root" + path};
}

MappedFile mapped_file(pid_t pid, const ProcMapping& m) { return {pid, m.start, m.end, m.path}; }

MappedFile mapped_file(const perfdata::Mmap2Record& m) {
  return {static_cast<pid_t>(m.pid), m.start, m.start + m.len, m.filename};
}

bool names_binary(const std::string& name) {
  if (name.empty() || name[0] != '/') return false;
  for (const char* pseudo : {"//anon", "/dev/zero", "/anon_hugepage", "/SYSV"})
    if (name.rfind(pseudo, 0) == 0) return false;
  return true;
}

perfdata::BuildId BuildIdCache::get(const std::string& path) {
  auto it = cache_.find(path);
  if (it != cache_.end()) return it->second;
  perfdata::BuildId id;
  if (auto elf = ElfFile::open(path)) id = elf->build_id();
  cache_.emplace(path, id);
  return id;
}

perfdata::BuildId BuildIdCache::get(const MappedFile& f, uint32_t maj, uint32_t min, uint64_t ino) {
  // Keys that cannot meet a path's: those start with '/'.
  const std::string key = "dev " + std::to_string(maj) + ":" + std::to_string(min) + " " + std::to_string(ino);
  if (ino) {
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  perfdata::BuildId id;
  bool read = false;
  for (const std::string& source : f.sources()) {
    if (auto elf = ElfFile::open(source)) {
      id = elf->build_id();
      read = true;
      break;
    }
  }
  // Unreadable (the process gone) is not remembered: another mapping of the file may be.
  if (ino && read) cache_.emplace(key, id);
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
    // Through the process: its file may be in another mount namespace (a container's), where
    // our own file of that name, if any, is another.
    if (names_binary(m.path)) r.build_id = build_ids.get(mapped_file(pid, m), m.maj, m.min, m.ino);
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
