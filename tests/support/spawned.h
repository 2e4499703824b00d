// A process a test starts and keeps a hand on: its pid, signals, its standard output read
// line by line as it comes (a pipe), and its exit. Killed and reaped if the test ends first.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace offwake::test {

class Spawned {
 public:
  // Runs argv (argv[0] is looked up on PATH) with stdin from /dev/null, stdout to a pipe this
  // object reads, stderr to the file `err` (or /dev/null if empty), SIGINT and SIGTERM at their
  // defaults and no signal blocked. Throws if it cannot be started.
  explicit Spawned(const std::vector<std::string>& argv, const std::string& err = "");
  ~Spawned();
  Spawned(const Spawned&) = delete;
  Spawned& operator=(const Spawned&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void signal(int sig);

  // Reads stdout until a line that starts with `prefix`, for at most `timeout_ms`; returns it,
  // or "" if the output ended or the time ran out first (what was read stays in out()).
  std::string wait_for_line(const std::string& prefix, int timeout_ms);
  // Waits for the exit, at most `timeout_ms` (then SIGKILL), reading stdout to its end;
  // returns the exit status, 128 + the signal if it was killed, -1 if it would not end.
  int wait(int timeout_ms);
  // Everything read from stdout so far.
  const std::string& out() const { return out_; }

 private:
  // Reads what stdout has within `timeout_ms`: 1 if it read some, 0 if none came, -1 at its end.
  int read_some(int timeout_ms);

  pid_t pid_ = -1;
  int stdout_ = -1;
  int status_ = -1;
  bool reaped_ = false;
  std::string out_;
  size_t scanned_ = 0;  // out_ up to here holds no line wait_for_line looked for
};

}  // namespace offwake::test
