#include "record/follow_perf.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace offwake {

bool follow_parent_perf(int sig) {
  const pid_t parent = getppid();
  std::ifstream in("/proc/" + std::to_string(parent) + "/comm");
  std::string comm;
  if (!std::getline(in, comm) || comm != "perf") return false;
  if (prctl(PR_SET_PDEATHSIG, sig) != 0) return false;
  // perf may have died between getppid() and prctl(): then we were reparented already.
  if (getppid() != parent) raise(sig);
  return true;
}

}  // namespace offwake
