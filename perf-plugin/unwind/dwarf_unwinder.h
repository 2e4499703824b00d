// User stacks from stack copies (--call-graph dwarf), unwound in user space with elfutils'
// libdwfl, as perf does when it reads such a recording: a Dwfl per process holds the files its
// pcs are in (reported as stacks need them, by path, from the recording's mappings, build ids
// checked), and libdwfl's unwinder follows the CFI of .eh_frame (or .debug_frame) through the
// copy of the stack. Everything that could not be unwound, or only in part, is counted by cause
// (UserUnwindCounts).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "callchain/callchain.h"
#include "callchain/user_stack.h"
#include "perfdata/records.h"
#include "unwind/mapped_files.h"
#include "unwind/recorded_mappings.h"

namespace offwake::unwind {

struct DwarfUnwinderOptions {
  uint32_t max_frames = 127;  // user frames at most (--max-stack)
  // A live recording: a process no record described existed before it, and is read from /proc.
  bool read_proc = false;
  // Processes whose Dwfl is kept (each holds its files open); the least recently used goes.
  size_t max_processes = 64;
};

class ProcessDwfl;

class DwarfUnwinder {
 public:
  explicit DwarfUnwinder(DwarfUnwinderOptions o = {});
  // Its Dwfls hold references to its mappings, files and counts: it stays where it is made.
  DwarfUnwinder(const DwarfUnwinder&) = delete;
  DwarfUnwinder& operator=(const DwarfUnwinder&) = delete;
  ~DwarfUnwinder();

  // What the recording says of its processes, in time order with the stacks.
  void mmap(const perfdata::Mmap2Record& m) { mappings_.mmap(m); }
  void fork(uint32_t parent_pid, uint32_t child_pid) { mappings_.fork(parent_pid, child_pid); }
  void exec(uint32_t pid) { mappings_.exec(pid); }
  // The process's leader exited: its Dwfl goes (its mappings stay, for threads still running).
  void exit(uint32_t pid, uint32_t tid);

  // Replaces the user frames of `chain` by those unwound from `dump`, taken from thread `tid`
  // of process `pid`: leaf first, each caller's pc one byte into its call (perf's way, so that
  // a call that ends a function is named by it). A copy that cannot be unwound gives its pc
  // alone; one without registers leaves the chain as it is. A sample whose event asked for
  // no copy is no stack to unwind, and not counted.
  void unwind(uint32_t pid, uint32_t tid, const UserStackDump& dump, Callchain& chain);

  const UserUnwindCounts& counts() const { return counts_; }

 private:
  std::vector<uint64_t> unwind_pcs(uint32_t pid, uint32_t tid, const UserStackDump& dump);
  ProcessDwfl* process(uint32_t pid);

  DwarfUnwinderOptions opt_;
  RecordedMappings mappings_;
  MappedFiles files_;
  std::unordered_map<uint32_t, std::unique_ptr<ProcessDwfl>> processes_;
  uint64_t clock_ = 0;  // for the least recently used
  UserUnwindCounts counts_;
};

}  // namespace offwake::unwind
