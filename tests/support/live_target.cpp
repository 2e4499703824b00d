#include "support/live_target.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

#include "support/paths.h"

namespace offwake::test {

LiveTarget::LiveTarget() {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) throw std::runtime_error("pipe");
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execl(kSymbolsTarget.c_str(), kSymbolsTarget.c_str(), nullptr);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  stdin_ = in[1];
  char buf[6] = {};
  bool ready = read(out[0], buf, 6) == 6 && std::string(buf, 5) == "ready";
  close(out[0]);
  if (!ready) throw std::runtime_error("symbols_target did not start");
}

LiveTarget::~LiveTarget() {
  close(stdin_);
  int st;
  waitpid(pid_, &st, 0);
}

}  // namespace offwake::test
