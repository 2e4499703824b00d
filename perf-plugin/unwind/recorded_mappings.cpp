#include "unwind/recorded_mappings.h"

#include <sys/mman.h>
#include <sys/sysmacros.h>

#include <iterator>

#include "synth/own_vdso.h"
#include "synth/proc_maps.h"
#include "unwind/mapped_files.h"

namespace offwake::unwind {

namespace {

// The file that holds the code of a mapping named `path`, if one can be opened: the file of
// that name (not anonymous memory or [stack], nor a file deleted since it was mapped), or for
// the vDSO our own copy of it. Empty if none.
std::string code_file(const std::string& path) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (path == kVdsoName) return own_vdso_file();
  if (!path.empty() && path[0] == '/' && !path.ends_with(kDeleted)) return path;
  return "";
}

}  // namespace

RecordedMappings::Process& RecordedMappings::process(uint32_t pid) {
  auto [it, added] = processes_.try_emplace(pid);
  if (added) {
    it->second.generation = next_generation_++;
    if (read_proc_) read_proc(pid, it->second);
  }
  return it->second;
}

void RecordedMappings::read_proc(uint32_t pid, Process& p) {
  auto maps = read_proc_maps(static_cast<pid_t>(pid));
  if (!maps) return;  // gone: its stacks have no mappings
  for (const ProcMapping& m : *maps)
    if (m.perms.size() >= 3 && m.perms[2] == 'x')
      add(pid, p, {m.start, m.end, m.pgoff, m.path, {}, makedev(m.maj, m.min), m.ino, {}});
}

// Live (read_proc_), a file of the process is read through /proc while the process lives: a
// file of another mount namespace, deleted since, or a memfd can still be unwound.
void RecordedMappings::add(uint32_t pid, Process& p, RecordedMapping m) {
  const std::string name = m.path;
  m.path = code_file(name);
  if (read_proc_ && !name.empty() && name[0] == '/' && name != kVdsoName) {
    m.open_path = live_file_path(pid, name, m.start, m.end);
    if (m.open_path == name) m.open_path.clear();
    if (m.path.empty() && !m.open_path.empty()) m.path = name;  // deleted, read through map_files
  }
  if (m.path.empty()) return;
  const uint64_t start = m.start;
  p.by_start[start] = std::move(m);
}

void RecordedMappings::remove_overlaps(Process& p, uint64_t start, uint64_t end) {
  auto it = p.by_start.lower_bound(start);
  if (it != p.by_start.begin() && std::prev(it)->second.end > start) --it;
  bool changed = false;
  while (it != p.by_start.end() && it->second.start < end) {
    RecordedMapping old = it->second;
    it = p.by_start.erase(it);
    changed = true;
    if (old.start < start) {
      RecordedMapping left = old;
      left.end = start;
      p.by_start[left.start] = left;
    }
    if (old.end > end) {
      RecordedMapping right = old;
      right.pgoff += end - old.start;
      right.start = end;
      it = p.by_start.emplace(right.start, right).first;
      ++it;
    }
  }
  if (changed) p.generation = next_generation_++;
}

void RecordedMappings::mmap(const perfdata::Mmap2Record& m) {
  if (m.len == 0 || (m.cpumode & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL) return;
  Process& p = process(m.pid);
  remove_overlaps(p, m.start, m.start + m.len);
  if (m.prot & PROT_EXEC)
    add(m.pid, p, {m.start, m.start + m.len, m.pgoff, m.filename, m.build_id, makedev(m.maj, m.min), m.ino, {}});
}

void RecordedMappings::fork(uint32_t parent_pid, uint32_t child_pid) {
  if (parent_pid == child_pid) return;
  Process child;
  child.by_start = process(parent_pid).by_start;
  child.generation = next_generation_++;
  processes_[child_pid] = std::move(child);
}

void RecordedMappings::exec(uint32_t pid) {
  Process& p = processes_[pid];  // not read from /proc: the new program's mappings follow
  p.by_start.clear();
  p.generation = next_generation_++;
}

const RecordedMapping* RecordedMappings::find(uint32_t pid, uint64_t addr) {
  Process& p = process(pid);
  auto it = p.by_start.upper_bound(addr);
  if (it == p.by_start.begin()) return nullptr;
  --it;
  return addr < it->second.end ? &it->second : nullptr;
}

uint64_t RecordedMappings::generation(uint32_t pid) { return process(pid).generation; }

}  // namespace offwake::unwind
