#include "support/test_cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "synth/cgroups.h"

namespace offwake::test {

TestCgroup::TestCgroup(const std::string& name, bool make) {
  const auto mount = cgroup2_mount();
  if (!mount) {
    error_ = "no cgroup2 file system is mounted (/proc/self/mountinfo)";
    return;
  }
  path_ = "/offwake-test-" + std::to_string(getpid()) + "-" + name;
  dir_ = mount->mount_point + path_;
  if (mount->root != "/") path_ = mount->root + path_;
  if (make && mkdir(dir_.c_str(), 0755) != 0) error_ = "mkdir " + dir_ + ": " + strerror(errno);
}

TestCgroup::~TestCgroup() {
  if (dir_.empty()) return;
  struct stat st{};
  if (stat(dir_.c_str(), &st) != 0) return;  // never made, or removed by the workload
  // Whatever a failed test left running in it goes (cgroup.kill, Linux 5.14), then the
  // directory, once the killed tasks have left it.
  std::ofstream(dir_ + "/cgroup.kill") << "1\n";
  for (int i = 0; i < 200 && rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

std::string TestCgroup::run_inside(const std::string& command) const {
  return "sh -c 'echo $$ > " + procs() + " && exec " + command + "'";
}

std::string container_like_id(unsigned seed) {
  std::string id;
  char part[17];
  for (unsigned i = 0; i < 4; ++i) {
    snprintf(part, sizeof part, "%016llx", (unsigned long long)(0x9e3779b97f4a7c15ull * (seed + i + 1)));
    id += part;
  }
  return id;
}

}  // namespace offwake::test
