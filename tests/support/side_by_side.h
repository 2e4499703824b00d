// One run recorded twice, side by side: by perf offwake record (-p the target processes) and by
// Debian's perf record of the scheduler tracepoints with DWARF user stacks (--call-graph dwarf),
// the reference for what a complete user stack is (issue 23). Both attach before the workload
// does what is compared: a workload started with a go signal (tests/workloads' -g) is released
// once both record, a server is driven once both record.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "support/run.h"
#include "support/spawned.h"
#include "support/user_stacks.h"

namespace offwake::test {

struct SideBySideOptions {
  std::vector<pid_t> pids;  // perf offwake record -p
  // perf record takes, system-wide, the blocking switch-outs of the threads named `comm` and the
  // wakeups of threads so named (wakers may be anyone), so it needs no pid: threads and
  // processes the targets start later are in, and so are wakers in other processes.
  std::string comm;
  // perf's copy of the user stack at each event. 65528, the most perf takes, for stacks deeper
  // than the default 8 KB; each sample is that big, so a busy server gets less.
  unsigned dwarf_stack_bytes = 65528;
  std::string offwake_options = "--backend bpf";  // BPF only: no silent fall-back
};

struct SideBySideRecording {
  int offwake_status = -1, perf_status = -1;
  std::string offwake_err, perf_err;    // what each recorder said
  std::string offwake_data, perf_data;  // the two files
  RunResult offwake_script, perf_script;
  std::vector<StackSample> ours;   // perf script of ours (kOffwakeStackFields)
  std::vector<StackSample> perfs;  // perf script of perf's (kDwarfStackFields)
};

// Waits until `offwake` (a perf offwake record) has its BPF programs attached to sched_switch
// and sched_waking (or, run with -v and the tracepoint back end, says it records), at most 60
// s; a recorder that exits first (its stderr in `err_file`) or takes longer is a test failure
// (false).
bool wait_attached(Spawned& offwake, const std::string& err_file);

class SideBySide {
 public:
  // Starts perf offwake record, waits until its BPF programs are attached, then starts perf
  // record and waits until it answers a ping on its control FIFO (it records by then). A
  // recorder that exits or takes more than 60 s is a test failure (ready() false).
  SideBySide(const TempDir& dir, const SideBySideOptions& o);
  ~SideBySide();
  bool ready() const { return ready_; }
  // Stops both and reads both files with Debian's perf script.
  SideBySideRecording stop();

 private:
  bool wait_attached();
  bool wait_perf_ack();

  std::string offwake_data_, perf_data_, offwake_err_, perf_err_, ctl_, ack_;
  std::unique_ptr<Spawned> offwake_, perf_;
  int ctl_fd_ = -1, ack_fd_ = -1;
  bool ready_ = false;
};

}  // namespace offwake::test
