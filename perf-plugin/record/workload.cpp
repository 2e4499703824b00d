#include "record/workload.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

namespace offwake {

namespace {

// With the errno, Error's message reads "cannot run 'cmd': No such file or directory".
std::string cannot_run(const std::string& command) { return "cannot run '" + command + "'"; }

// What execvp would find for `command`: 0, or why it cannot run it (as errno). Checked
// before anything is loaded, so that a typo fails at once.
int find_command(const std::string& command, std::string* found_path = nullptr) {
  auto check = [](const std::string& path) -> int {
    if (access(path.c_str(), F_OK) != 0) return errno;
    if (access(path.c_str(), X_OK) != 0) return errno;
    return 0;
  };
  if (command.find('/') != std::string::npos) {
    if (found_path) *found_path = command;
    return check(command);
  }
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  int found = ENOENT;
  size_t from = 0;
  for (;;) {
    size_t colon = dirs.find(':', from);
    std::string dir = dirs.substr(from, colon == std::string::npos ? std::string::npos : colon - from);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + command;
    int e = check(candidate);
    if (e == 0) {
      if (found_path) *found_path = candidate;
      return 0;
    }
    if (e != ENOENT) found = e;  // as execvp: a file that exists but cannot run says why
    if (colon == std::string::npos) return found;
    from = colon + 1;
  }
}

}  // namespace

Status Workload::check_command(const std::string& command) {
  if (int e = find_command(command)) return Error::usage(cannot_run(command), e);
  return ok_status();
}

std::string Workload::path_of(const std::string& command) {
  std::string path;
  return find_command(command, &path) == 0 ? path : "";
}

Result<Workload> Workload::prepare(const std::vector<std::string>& argv, bool stdout_to_stderr) {
  if (argv.empty()) return Error::usage("no command to run");

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
    signal(SIGHUP, SIG_DFL);
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
  w.command_ = argv[0];
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
  term_signal_ = o.term_signal_;
  exec_errno_ = o.exec_errno_;
  command_ = std::move(o.command_);
  exec_error_ = std::move(o.exec_error_);
  return *this;
}

Workload::~Workload() {
  if (pid_ <= 0 || reaped_) return;
  // Still running when the recording ended on an error (a full disk, a reader gone): ended as
  // at the stop, as perf record ends its workload, so that the error is not held back until
  // the command finishes on its own.
  kill(pid_, started_ ? SIGTERM : SIGKILL);
  int st;
  waitpid(pid_, &st, 0);
}

Status Workload::start() {
  started_ = true;
  go_.reset();  // EOF in the child: exec now
  collect_exec_error();
  if (!exec_error_.empty()) return Error(exec_error_, exec_errno_);
  return ok_status();
}

Status Workload::start_held(const std::function<void()>& at_entry) {
#if defined(__x86_64__)
  // Seized before it may exec: the exec stops it (PTRACE_EVENT_EXEC).
  if (ptrace(PTRACE_SEIZE, pid_, nullptr, reinterpret_cast<void*>(PTRACE_O_TRACEEXEC)) == 0) {
    Status s = start();
    if (!s) return s;
    hold_until_entry(at_entry);
    return ok_status();
  }
#endif
  (void)at_entry;
  return start();
}

void Workload::reaped(int st) {
  reaped_ = true;
  exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  term_signal_ = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

#if defined(__x86_64__)
namespace {

// The entry point the kernel handed the new image (AT_ENTRY of /proc/PID/auxv), or 0.
uint64_t entry_point(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/auxv", std::ios::binary);
  uint64_t pair[2];
  while (in.read(reinterpret_cast<char*>(pair), sizeof pair))
    if (pair[0] == AT_ENTRY) return pair[1];
  return 0;
}

}  // namespace
#endif

// Between the exec stop and the breakpoint, the dynamic loader maps and relocates the
// libraries; a signal meanwhile is passed on. Whatever goes wrong, the command is let go.
void Workload::hold_until_entry(const std::function<void()>& at_entry) {
#if defined(__x86_64__)
  int st = 0;
  uint64_t entry = 0, saved = 0;
  bool armed = false;
  for (;;) {
    if (waitpid(pid_, &st, __WALL) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (WIFEXITED(st) || WIFSIGNALED(st)) return reaped(st);  // exec failed, or killed
    if (!WIFSTOPPED(st)) continue;
    const int sig = WSTOPSIG(st);
    if (sig == SIGTRAP && (st >> 16) == PTRACE_EVENT_EXEC && !armed) {
      entry = entry_point(pid_);
      errno = 0;
      saved = entry ? static_cast<uint64_t>(ptrace(PTRACE_PEEKTEXT, pid_, entry, nullptr)) : 0;
      if (!entry || errno ||
          ptrace(PTRACE_POKETEXT, pid_, entry, reinterpret_cast<void*>((saved & ~0xffull) | 0xcc)) != 0)
        break;  // no breakpoint: let it go from here
      armed = true;
      ptrace(PTRACE_CONT, pid_, nullptr, nullptr);
      continue;
    }
    user_regs_struct regs;
    if (sig == SIGTRAP && armed && ptrace(PTRACE_GETREGS, pid_, nullptr, &regs) == 0 && regs.rip == entry + 1) {
      ptrace(PTRACE_POKETEXT, pid_, entry, reinterpret_cast<void*>(saved));
      regs.rip = entry;
      ptrace(PTRACE_SETREGS, pid_, nullptr, &regs);
      break;
    }
    // Any other stop: a signal for the command, passed on (a group stop takes none).
    ptrace(PTRACE_CONT, pid_, nullptr, reinterpret_cast<void*>(static_cast<intptr_t>(sig == SIGTRAP ? 0 : sig)));
  }
  at_entry();
  ptrace(PTRACE_DETACH, pid_, nullptr, nullptr);
#else
  (void)at_entry;
#endif
}

void Workload::collect_exec_error() {
  int e = 0;
  ssize_t n;
  while ((n = read(errors_.get(), &e, sizeof e)) < 0 && errno == EINTR) {
  }
  if (n == sizeof e) {
    exec_errno_ = e;
    exec_error_ = cannot_run(command_);
  }
  errors_.reset();
}

bool Workload::exited() {
  if (reaped_) return true;
  int st;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r != pid_) return false;
  reaped(st);
  return true;
}

void Workload::wait() {
  if (reaped_) return;
  int st;
  while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  reaped(st);
}

void Workload::terminate() {
  if (!reaped_ && pid_ > 0) kill(pid_, SIGTERM);
}

}  // namespace offwake
