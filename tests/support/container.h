// A container made from Debian's own tools, as a test needs one: a root file system in a
// temporary directory that holds one binary at a path the host lacks (/app/ctr_app by
// default), run in its own mount, pid and uts namespaces (`unshare --mount --pid --uts --fork
// --kill-child`) and chrooted into that root, optionally in a given cgroup v2 directory. The
// binary should be statically linked (tests/workloads' wl_pipe_static): the root holds nothing
// else, no loader and no libc. Its standard output is read as it comes (Spawned), so the
// workload's "truth" lines are there; its pids as the host sees them are read from /proc while
// it runs. Killed (its whole pid namespace) and reaped if the test ends first; the root file
// system is removed with the object.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/run.h"
#include "support/spawned.h"

namespace offwake::test {

struct ContainerOptions {
  std::string binary;                 // a file of the host's, copied into the root file system
  std::string path = "/app/ctr_app";  // where it is in there (absolute)
  std::vector<std::string> args;      // its arguments
  std::string cgroup;                 // a cgroup v2 directory to join before exec ("" none)
};

class Container {
 public:
  // Builds the root file system and starts the binary; throws if either fails.
  explicit Container(ContainerOptions options);
  ~Container();
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  const std::string& root() const { return root_->path(); }
  // The outer process (unshare), as the host sees it.
  pid_t outer_pid() const { return process_->pid(); }
  // See Spawned: the workload's standard output, read as it comes.
  std::string wait_for_line(const std::string& prefix, int timeout_ms) { return process_->wait_for_line(prefix, timeout_ms); }
  int wait(int timeout_ms) { return process_->wait(timeout_ms); }
  const std::string& out() const { return process_->out(); }

  // The processes of the container alive now: their pid in the container's pid namespace
  // (the last of /proc/PID/status's NSpid) -> their pid on the host.
  std::map<uint32_t, uint32_t> host_pids() const;

 private:
  ContainerOptions options_;
  std::unique_ptr<TempDir> root_;
  std::unique_ptr<Spawned> process_;
};

}  // namespace offwake::test
