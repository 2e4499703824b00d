// --user-walker=auto: the unwind tables the BPF user walker needs, kept in step with the
// processes it walks. Before the programs attach, the processes alive (the targets, or every
// process system-wide) get tables for all the code they map; afterwards the tracking records
// (MMAP2 of code, exec, fork, exit) bring those of processes and libraries that appear. With
// targets (-p, -t, a command), a process outside them whose thread the walker met without
// tables (a waker of a target) asks for them, and gets them and is followed from then on
// (serve_requests). The tables of binaries mapped during the recording are built beside it
// (unwind/table_builder.h; publish_built). A stack taken before its process has tables is
// walked by frame pointers, and counted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_set>
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
  // The processes that asked for tables since the last call get them.
  void serve_requests();
  // The tables built beside the recording since the last call are given to the processes that
  // map their binaries; with `all`, once every table asked for is built.
  void publish_built(bool all = false);
  RecordStats::Unwind stats() const;

 private:
  void add_process(uint32_t pid, std::vector<unwind::CodeMapping>& out) const;
  void map_processes(const std::vector<uint32_t>& pids, unsigned threads);
  // Whether a process's mappings are followed: a target, or one that asked.
  bool followed(uint32_t pid) const { return is_target_(pid) || asked_.count(pid); }

  bpf::UnwindMaps maps_;
  std::function<bool(uint32_t)> is_target_;
  unwind::TableStore tables_;
  unwind::ProcessMappings processes_;
  std::unordered_set<uint32_t> asked_;  // processes outside the targets that asked, until they exit
  uint64_t setup_ns_ = 0, on_request_ = 0, request_ns_ = 0;
};

}  // namespace offwake
