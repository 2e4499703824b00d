#include "support/spawned.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdexcept>

extern char** environ;

namespace offwake::test {
namespace {

uint64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

}  // namespace

Spawned::Spawned(const std::vector<std::string>& argv, const std::string& err) {
  int out[2];
  if (argv.empty() || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("Spawned: pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, err.empty() ? "/dev/null" : err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults, none;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = posix_spawnp(&pid_, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    throw std::runtime_error("Spawned: cannot start " + argv[0]);
  }
  stdout_ = out[0];
}

Spawned::~Spawned() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (stdout_ >= 0) close(stdout_);
}

bool Spawned::running() {
  if (reaped_) return false;
  int st;
  if (waitpid(pid_, &st, WNOHANG) != pid_) return true;
  reaped_ = true;
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return false;
}

void Spawned::signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}

int Spawned::read_some(int timeout_ms) {
  if (stdout_ < 0) return -1;
  pollfd p{stdout_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return 0;
  char buf[4096];
  const ssize_t n = read(stdout_, buf, sizeof buf);
  if (n <= 0) {
    close(stdout_);
    stdout_ = -1;
    return -1;
  }
  out_.append(buf, static_cast<size_t>(n));
  return 1;
}

std::string Spawned::wait_for_line(const std::string& prefix, int timeout_ms) {
  const uint64_t deadline = now_ms() + static_cast<uint64_t>(timeout_ms);
  for (;;) {
    // Complete lines only: a line is looked at once its newline came.
    for (size_t end; (end = out_.find('\n', scanned_)) != std::string::npos; scanned_ = end + 1) {
      std::string line = out_.substr(scanned_, end - scanned_);
      if (line.rfind(prefix, 0) == 0) {
        scanned_ = end + 1;
        return line;
      }
    }
    const uint64_t now = now_ms();
    if (now >= deadline || read_some(static_cast<int>(deadline - now)) < 0) return "";
  }
}

int Spawned::wait(int timeout_ms) {
  const uint64_t deadline = now_ms() + static_cast<uint64_t>(timeout_ms);
  while (running()) {
    if (now_ms() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      reaped_ = true;
      return -1;
    }
    // Its output is read while it runs, so that a full pipe never holds it up; once the pipe
    // is closed, a bounded wait for the exit.
    if (read_some(20) < 0) usleep(10'000);
  }
  // What it wrote before it exited: to the end, or as long as more comes (a child of its own
  // may still hold the pipe).
  while (read_some(0) > 0) {
  }
  return status_;
}

}  // namespace offwake::test
