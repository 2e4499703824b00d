#include "synth/process_descriptions.h"

#include <algorithm>

#include "synth/namespaces.h"

namespace offwake {

namespace {

// The process a record describes, or 0 for a record that describes none (the kernel's and its
// modules' maps have pid -1).
uint32_t process_of(const perfdata::Record& r) {
  if (const auto* c = std::get_if<perfdata::CommRecord>(&r)) return c->pid;
  if (const auto* m = std::get_if<perfdata::Mmap2Record>(&r)) return m->pid == UINT32_MAX ? 0 : m->pid;
  if (const auto* t = std::get_if<perfdata::TaskRecord>(&r)) return t->pid;
  if (const auto* n = std::get_if<perfdata::NamespacesRecord>(&r)) return n->pid;
  return 0;
}

// About what a held record costs.
size_t record_bytes(const perfdata::Record& r) {
  size_t n = sizeof r;
  if (const auto* c = std::get_if<perfdata::CommRecord>(&r)) n += c->comm.size();
  if (const auto* m = std::get_if<perfdata::Mmap2Record>(&r)) n += m->filename.size();
  return n;
}

}  // namespace

Result<ProcessDescriptions> ProcessDescriptions::take(BuildIdCache& build_ids, bool hold, const RecordCallback& emit,
                                                      size_t hold_limit, bool retain, bool namespaces) {
  ProcessDescriptions d(true, hold_limit);
  d.retaining_ = retain;
  auto keep = [&](const perfdata::Record& r) {
    d.retain(process_of(r), r);
    return d.hold(process_of(r), r, emit);
  };
  OFFWAKE_TRY(synthesize_all_processes(build_ids, [&](const perfdata::Record& r) -> Status {
    OFFWAKE_TRY(keep(r));
    // Every thread /proc names (a COMM), with its namespaces after it, as perf synthesizes them.
    const auto* c = std::get_if<perfdata::CommRecord>(&r);
    if (!namespaces || !c) return ok_status();
    auto ns = read_namespaces(static_cast<pid_t>(c->pid), static_cast<pid_t>(c->tid));
    return ns ? keep(*ns) : ok_status();
  }));
  if (!hold) OFFWAKE_TRY(d.release_all(emit));
  return d;
}

Status ProcessDescriptions::tracking(const perfdata::Record& r, const std::function<bool(uint32_t)>& is_target,
                                     const RecordCallback& emit) {
  const uint32_t pid = process_of(r);
  const auto* t = std::get_if<perfdata::TaskRecord>(&r);
  // A new process, not a new thread (whose pid is its process's).
  if (t && !t->exit && t->pid == t->tid && t->pid != t->ppid) forked_from_[t->pid] = t->ppid;
  retain(pid, r);
  if (!holding_ || pid == 0 || described_.count(pid)) return emit(r);
  if (is_target(pid)) {
    // Its records from the start first (a -p process's), then this one.
    OFFWAKE_TRY(describe(pid, emit));
    return emit(r);
  }
  return hold(pid, r, emit);
}

Status ProcessDescriptions::hold(uint32_t pid, const perfdata::Record& r, const RecordCallback& emit) {
  if (!holding_) return emit(r);
  held_[pid].push_back(r);
  held_bytes_ += record_bytes(r);
  if (held_bytes_ > hold_limit_) {
    overflowed_ = true;
    return release_all(emit);
  }
  return ok_status();
}

void ProcessDescriptions::retain(uint32_t pid, const perfdata::Record& r) {
  if (!retaining_ || pid == 0) return;
  retained_bytes_ += record_bytes(r);
  // Past the limit, a window's processes are no longer carried into the next: the samples of
  // processes that exit then may lack their names in the next file (perf shows their pids).
  if (retained_bytes_ > hold_limit_) {
    retaining_ = false;
    std::unordered_map<uint32_t, std::vector<perfdata::Record>>().swap(retained_);
    return;
  }
  retained_[pid].push_back(r);
}

namespace {

bool has_maps(const std::vector<perfdata::Record>& records) {
  return std::any_of(records.begin(), records.end(),
                     [](const perfdata::Record& r) { return std::holds_alternative<perfdata::Mmap2Record>(r); });
}

}  // namespace

Result<size_t> ProcessDescriptions::carry_gone(const ProcessDescriptions& previous, const RecordCallback& emit) {
  size_t carried = 0;
  for (const auto& [pid, records] : previous.retained_) {
    // Alive at this window's start: /proc said. But a process exiting as /proc was read may
    // have left its threads' names without its maps (its memory already gone): then what the
    // last window knew of it is carried too.
    if (auto now = retained_.find(pid); now != retained_.end() && (has_maps(now->second) || !has_maps(records)))
      continue;
    ++carried;
    for (const auto& r : records) {
      if (holding_) {
        held_[pid].push_back(r);
        held_bytes_ += record_bytes(r);
      } else {
        OFFWAKE_TRY(emit(r));
      }
    }
  }
  return carried;
}

Status ProcessDescriptions::release_all(const RecordCallback& emit) {
  holding_ = false;
  for (const auto& [pid, records] : held_)
    for (const auto& r : records) OFFWAKE_TRY(emit(r));
  held_.clear();
  held_bytes_ = 0;
  return ok_status();
}

Status ProcessDescriptions::describe(uint32_t pid, const RecordCallback& emit) {
  // Bounded: a pid reused while recording could make the forks a loop.
  for (int hop = 0; hop < 64 && pid != 0; ++hop) {
    if (!described_.insert(pid).second) return ok_status();
    if (auto it = held_.find(pid); it != held_.end()) {
      const std::vector<perfdata::Record> records = std::move(it->second);
      held_.erase(it);
      for (const auto& r : records) {
        held_bytes_ -= std::min(held_bytes_, record_bytes(r));
        OFFWAKE_TRY(emit(r));
      }
    }
    auto parent = forked_from_.find(pid);
    if (parent == forked_from_.end()) return ok_status();
    pid = parent->second;
  }
  return ok_status();
}

}  // namespace offwake
