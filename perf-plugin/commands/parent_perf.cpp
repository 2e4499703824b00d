#include "commands/parent_perf.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace offwake {

namespace {

bool is_perf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  return std::getline(in, comm) && comm == "perf";
}

bool parent_is_perf() { return is_perf(getppid()); }

}  // namespace

bool follow_parent_perf(int sig) {
  const pid_t parent = getppid();
  if (!is_perf(parent)) return false;
  if (prctl(PR_SET_PDEATHSIG, sig) != 0) return false;
  // perf may have died between getppid() and prctl(): then we were reparented already.
  if (getppid() != parent) raise(sig);
  return true;
}

int exit_status_for_parent(int status) {
  constexpr int kNotFound = 127, kCannotRunUnderPerf = 255;
  return status == kNotFound && parent_is_perf() ? kCannotRunUnderPerf : status;
}

}  // namespace offwake
