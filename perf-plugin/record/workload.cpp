#include "record/workload.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace offwake {

Result<Workload> Workload::prepare(const std::vector<std::string>& argv, bool stdout_to_stderr) {
  if (argv.empty()) return Error("no command to run", EINVAL);
  int go[2], err[2];
  if (pipe2(go, O_CLOEXEC) != 0) return Error::from_errno("creating a pipe for the workload");
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(go[0]);
    close(go[1]);
    return Error::from_errno("creating a pipe for the workload");
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return Error::from_errno("forking the workload");
  if (pid == 0) {
    close(go[1]);
    close(err[0]);
    if (stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    char c;
    // Wait for start(): EOF when the parent closes its end.
    while (read(go[0], &c, 1) < 0 && errno == EINTR) {
    }
    execvp(args[0], args.data());
    int e = errno;
    (void)!write(err[1], &e, sizeof e);
    _exit(127);
  }
  close(go[0]);
  close(err[1]);
  Workload w;
  w.pid_ = pid;
  w.go_ = UniqueFd(go[1]);
  w.errors_ = UniqueFd(err[0]);
  return w;
}

Workload::Workload(Workload&& o) noexcept { *this = std::move(o); }

Workload& Workload::operator=(Workload&& o) noexcept {
  pid_ = std::exchange(o.pid_, -1);
  go_ = std::move(o.go_);
  errors_ = std::move(o.errors_);
  started_ = o.started_;
  reaped_ = o.reaped_;
  exit_status_ = o.exit_status_;
  exec_error_ = std::move(o.exec_error_);
  return *this;
}

Workload::~Workload() {
  if (pid_ <= 0 || reaped_) return;
  if (!started_) kill(pid_, SIGKILL);
  int st;
  waitpid(pid_, &st, 0);
}

Status Workload::start() {
  started_ = true;
  go_.reset();  // EOF in the child: exec now
  collect_exec_error();
  if (!exec_error_.empty()) return Error(exec_error_);
  return ok_status();
}

void Workload::collect_exec_error() {
  int e = 0;
  ssize_t n;
  while ((n = read(errors_.get(), &e, sizeof e)) < 0 && errno == EINTR) {
  }
  if (n == sizeof e) exec_error_ = std::string("cannot run the workload: ") + strerror(e);
  errors_.reset();
}

bool Workload::exited() {
  if (reaped_) return true;
  int st;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r != pid_) return false;
  reaped_ = true;
  exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return true;
}

void Workload::wait() {
  if (reaped_) return;
  int st;
  while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void Workload::terminate() {
  if (!reaped_ && pid_ > 0) kill(pid_, SIGTERM);
}

}  // namespace offwake
