// A cgroup v2 directory of a test's own, on the machine's cgroup2 mount (found in
// /proc/self/mountinfo): offwake-test-PID-NAME under the hierarchy's root. Made by the object,
// or by the workload itself while a recording runs (then the object only names it); either
// way removed with the object, whatever is left in it killed first.
#pragma once

#include <string>

namespace offwake::test {

class TestCgroup {
 public:
  // `make`: create the directory now (else the workload does, e.g. with mkdir dir()).
  explicit TestCgroup(const std::string& name, bool make = true);
  ~TestCgroup();
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;

  // Empty when the machine has no cgroup2 mount or the directory could not be made.
  const std::string& error() const { return error_; }
  // In the file system ("/sys/fs/cgroup/unified/offwake-test-42-x"), and as perf names it
  // (the path below the mount: "/offwake-test-42-x").
  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }
  // The file a process writes its pid (or 0, itself) to, to move into the cgroup.
  std::string procs() const { return dir_ + "/cgroup.procs"; }
  // A shell command line that runs `command` inside the cgroup: the shell moves itself in,
  // then execs it.
  std::string run_inside(const std::string& command) const;

 private:
  std::string dir_, path_, error_;
};

// 64 hexadecimal digits, as container runtimes name their containers, made of `seed`.
std::string container_like_id(unsigned seed);

}  // namespace offwake::test
