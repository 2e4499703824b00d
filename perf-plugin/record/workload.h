// The command `perf offwake record -- cmd args` runs: forked at once but held before exec
// until the BPF programs and tracking events are in place, so nothing it does is missed.
#pragma once

#include <sys/types.h>

#include <cerrno>

#include <functional>
#include <string>
#include <vector>

#include "util/fd.h"
#include "util/result.h"

namespace offwake {

class Workload {
 public:
  // Whether `command` is one execvp can run (looked up in PATH as execvp does); the error
  // says "cannot run 'cmd': No such file or directory" with that errno.
  static Status check_command(const std::string& command);
  // The file execvp would run for `command`, or "".
  static std::string path_of(const std::string& command);
  // With `stdout_to_stderr` (perf.data goes to our stdout) the command's output goes to stderr.
  static Result<Workload> prepare(const std::vector<std::string>& argv, bool stdout_to_stderr);
  Workload(Workload&&) noexcept;
  Workload& operator=(Workload&&) noexcept;
  ~Workload();  // a workload that was never started is killed

  pid_t pid() const { return pid_; }
  // Lets the child exec the command. An exec failure is reported by wait().
  Status start();
  // The same, but the command is held at its entry point, once its dynamic loader has mapped
  // the libraries it needs, while `at_entry` runs: then their MMAP2 records are in the ring
  // buffers, and the unwind tables of all its code can be in place before it runs a single
  // instruction of its own (ptrace: a breakpoint at AT_ENTRY). Where it cannot be traced
  // (ptrace forbidden) it runs at once, as with start(). x86-64 only.
  Status start_held(const std::function<void()>& at_entry);
  // Non-blocking: true once the child has exited; its status is then exit_status().
  bool exited();
  // Blocks until the child exits.
  void wait();
  void terminate();  // SIGTERM, for Ctrl-C while recording
  // As a shell reports it: the exit code, or 128 + the signal that killed it.
  int exit_status() const { return exit_status_; }
  // The signal that killed it, 0 if it exited.
  int term_signal() const { return term_signal_; }
  // The errno of a failed exec (0 if none), and what failed ("cannot run 'cmd'"). A shell exits 127 when the command is not found, 126 when it cannot run.
  int exec_errno() const { return exec_errno_; }
  const std::string& exec_error() const { return exec_error_; }
  static int exec_failure_status(int err) { return err == ENOENT ? 127 : 126; }

 private:
  Workload() = default;
  void collect_exec_error();
  void reaped(int wait_status);
  void hold_until_entry(const std::function<void()>& at_entry);

  pid_t pid_ = -1;
  UniqueFd go_;      // write end: closing it lets the child exec
  UniqueFd errors_;  // read end: the child writes errno here if exec fails (CLOEXEC otherwise)
  bool started_ = false, reaped_ = false;
  int exit_status_ = -1, term_signal_ = 0, exec_errno_ = 0;
  std::string command_;
  std::string exec_error_;
};

}  // namespace offwake
