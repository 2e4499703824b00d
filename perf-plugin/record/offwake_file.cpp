#include "record/offwake_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "offwake.h"

namespace offwake {

bool path_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

bool output_is_stream(const std::string& output) {
  struct stat st {};
  return output == "-" || (stat(output.c_str(), &st) == 0 && S_ISFIFO(st.st_mode));
}

Result<UniqueFd> open_output_stream(const std::string& output) {
  UniqueFd fd(output == "-" ? fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0) : open(output.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("opening " + output_name(output));
  return fd;
}

std::string output_name(const std::string& output) { return output == "-" ? "standard output" : output; }

Status move_old_output(const std::string& output) {
  // As perf record's: an empty file (a failed perf record leaves one) is just replaced.
  struct stat st {};
  if (output_is_stream(output) || stat(output.c_str(), &st) != 0 || st.st_size == 0) return ok_status();
  const std::string old = output + ".old";
  if (rename(output.c_str(), old.c_str()) != 0) return Error::from_errno("cannot rename " + output + " to " + old);
  return ok_status();
}

// S: interruptible sleep; D: uninterruptible sleep (the load average's); I: an idle kernel
// thread's wait (TASK_IDLE, D with NOLOAD), which is not what "D" means to anyone.
Result<uint32_t> parse_state_letters(const std::string& s) {
  uint32_t mask = 0;
  for (char c : s) {
    if (c == 'S') mask |= OFFWAKE_WANT_S;
    else if (c == 'D') mask |= OFFWAKE_WANT_D;
    else if (c == 'I') mask |= OFFWAKE_WANT_I;
    else return Error::usage("--state takes letters from S, D and I (e.g. SD), not '" + s + "'");
  }
  if (!mask) return Error::usage("--state takes letters from S, D and I (e.g. SD)");
  return mask;
}

}  // namespace offwake
