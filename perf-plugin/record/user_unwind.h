// --user-walker=auto: the unwind tables the BPF user walker needs, kept in step with the
// processes it walks. Before the programs attach, the processes alive (the targets, or every
// process system-wide) get tables for all the code they map; afterwards the tracking records
// (MMAP2 of code, exec, fork, exit) bring those of processes and libraries that appear. A
// stack taken before its process has tables is walked by frame pointers, and counted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "bpf/unwind_maps.h"
#include "perfdata/records.h"
#include "samples/record_stats.h"
#include "unwind/process_mappings.h"
#include "unwind/table_store.h"
#include "util/result.h"

namespace offwake {

class UserUnwind {
 public:
  // `is_target(pid)`: whether a process's stacks are recorded (all of them system-wide).
  UserUnwind(bpf::UnwindMaps maps, std::function<bool(uint32_t)> is_target);

  // The processes alive now: `pids`, or every process with `all`.
  void seed(const std::vector<uint32_t>& pids, bool all);
  // A command about to be exec'd: the tables of its binary, its dynamic loader and the
  // libraries it needs (found where Debian keeps them) are built now, so that its MMAP2 records
  // find them ready. A guess: the records decide what is used.
  void prepare_command(const std::string& path);
  void tracking(const perfdata::Record& r);
  RecordStats::Unwind stats() const;

 private:
  void add_process(uint32_t pid, std::vector<unwind::CodeMapping>& out) const;

  bpf::UnwindMaps maps_;
  std::function<bool(uint32_t)> is_target_;
  unwind::TableStore tables_;
  unwind::ProcessMappings processes_;
  uint64_t setup_ns_ = 0;
};

}  // namespace offwake
