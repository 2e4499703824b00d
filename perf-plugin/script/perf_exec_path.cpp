#include "script/perf_exec_path.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "util/fd.h"
#include "util/text.h"

extern char** environ;

namespace offwake::script {
namespace {

bool has_trace_util(const std::string& dir) {
  struct stat st {};
  return !dir.empty() && stat((dir + "/scripts/python/Perf-Trace-Util").c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string own_directory() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : exe.parent_path().string();
}

// posix_spawn's file actions, destroyed with the object.
class SpawnActions {
 public:
  SpawnActions() { posix_spawn_file_actions_init(&actions_); }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&actions_); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

// The whole of what `fd` gives until its end, up to `limit` bytes kept.
std::string read_all(int fd, size_t limit) {
  std::string out;
  char buf[512];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, std::min(static_cast<size_t>(n), limit - std::min(limit, out.size())));
  }
}

// What `perf --exec-path` prints, trimmed, or "" when no perf runs or it fails. perf is run as
// a program found on PATH, never through a shell (PATH and the output are not ours to
// interpret); its standard error is dropped, so that a perf that cannot run says nothing.
std::string perf_on_path_exec_path() {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return "";
  UniqueFd from_perf(p[0]), to_us(p[1]);
  SpawnActions actions;
  posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(actions.get(), to_us.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(actions.get(), STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  char perf[] = "perf", exec_path[] = "--exec-path";
  char* argv[] = {perf, exec_path, nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, perf, actions.get(), nullptr, argv, environ) != 0) return "";
  to_us.reset();  // so that the read ends when perf does
  const std::string out = read_all(from_perf.get(), 4096);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return "";
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? trimmed(out) : "";
}

}  // namespace

std::optional<std::string> find_perf_exec_path() {
  if (std::string own = own_directory(); has_trace_util(own)) return own;
  if (std::string perfs = perf_on_path_exec_path(); has_trace_util(perfs)) return perfs;
  return std::nullopt;
}

void provide_perf_exec_path() {
  if (getenv("PERF_EXEC_PATH")) return;
  if (auto dir = find_perf_exec_path()) setenv("PERF_EXEC_PATH", dir->c_str(), 1);
}

}  // namespace offwake::script
