// The command `perf offwake record -- cmd args` runs: forked at once but held before exec
// until the BPF programs and tracking events are in place, so nothing it does is missed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "util/fd.h"
#include "util/result.h"

namespace offwake {

class Workload {
 public:
  // With `stdout_to_stderr` (perf.data goes to our stdout) the command's output goes to stderr.
  static Result<Workload> prepare(const std::vector<std::string>& argv, bool stdout_to_stderr);
  Workload(Workload&&) noexcept;
  Workload& operator=(Workload&&) noexcept;
  ~Workload();  // a workload that was never started is killed

  pid_t pid() const { return pid_; }
  // Lets the child exec the command. An exec failure is reported by wait().
  Status start();
  // Non-blocking: true once the child has exited; its status is then exit_status().
  bool exited();
  // Blocks until the child exits.
  void wait();
  void terminate();  // SIGTERM, for Ctrl-C while recording
  int exit_status() const { return exit_status_; }
  // The exec failure the child reported, if any ("execvp: No such file or directory").
  const std::string& exec_error() const { return exec_error_; }

 private:
  Workload() = default;
  void collect_exec_error();

  pid_t pid_ = -1;
  UniqueFd go_;      // write end: closing it lets the child exec
  UniqueFd errors_;  // read end: the child writes errno here if exec fails (CLOEXEC otherwise)
  bool started_ = false, reaped_ = false;
  int exit_status_ = -1;
  std::string exec_error_;
};

}  // namespace offwake
