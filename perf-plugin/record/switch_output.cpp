#include "record/switch_output.h"

#include <sys/stat.h>
#include <sys/time.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace offwake {

namespace {

// A number of one or more digits followed by exactly one unit character; nullopt-like false.
bool number_and_unit(const std::string& v, uint64_t& n, char& unit) {
  if (v.size() < 2) return false;
  const std::string digits = v.substr(0, v.size() - 1);
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  errno = 0;
  n = strtoull(digits.c_str(), nullptr, 10);
  unit = v.back();
  return errno == 0;
}

}  // namespace

Result<SwitchOutputSpec> parse_switch_output(const std::string& value) {
  SwitchOutputSpec s;
  if (value == "signal") {
    s.mode = SwitchOutputSpec::Mode::kSignal;
    return s;
  }
  const std::string usage =
      "--switch-output takes signal, a time (10s, 5m, 1h, 1d) or a size (100M; B, K, M, G), not '" + value + "'";
  uint64_t n = 0;
  char unit = 0;
  if (!number_and_unit(value, n, unit) || n == 0) return Error::usage(usage);
  uint64_t seconds = 0, scale = 0;
  switch (unit) {
    case 's': seconds = 1; break;
    case 'm': seconds = 60; break;
    case 'h': seconds = 3600; break;
    case 'd': seconds = 86400; break;
    case 'B': case 'b': scale = 1; break;
    case 'K': case 'k': scale = 1ull << 10; break;
    case 'M': scale = 1ull << 20; break;
    case 'G': case 'g': scale = 1ull << 30; break;
    default: return Error::usage(usage);
  }
  // Times up to a year, sizes up to a terabyte: beyond that, a typo.
  if (seconds) {
    if (n > 366 * 86400 / seconds) return Error::usage("--switch-output time is over a year: '" + value + "'", ERANGE);
    s.mode = SwitchOutputSpec::Mode::kTime;
    s.interval_ns = n * seconds * 1'000'000'000ull;
  } else {
    if (n > (1ull << 40) / scale) return Error::usage("--switch-output size is over 1T: '" + value + "'", ERANGE);
    s.mode = SwitchOutputSpec::Mode::kSize;
    s.bytes = n * scale;
  }
  return s;
}

Result<uint64_t> parse_switch_max_files(const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = strtoull(value.c_str(), &end, 10);
  if (value.empty() || *end || errno || value[0] == '-' || n == 0 || n > 1'000'000)
    return Error::usage("--switch-max-files takes a number of files from 1 to 1000000, not '" + value + "'");
  return static_cast<uint64_t>(n);
}

std::string switch_output_timestamp() {
  struct timeval tv {};
  gettimeofday(&tv, nullptr);
  struct tm tm {};
  localtime_r(&tv.tv_sec, &tm);
  char date[32];
  strftime(date, sizeof date, "%Y%m%d%H%M%S", &tm);
  char out[48];
  snprintf(out, sizeof out, "%s%02u", date, static_cast<unsigned>(tv.tv_usec / 10000));
  return out;
}

std::string SwitchedFiles::next_name(const std::string& output) const {
  std::string name = output + "." + switch_output_timestamp();
  // Two switches within a hundredth of a second: the later file waits for a name of its own
  // rather than replace the earlier.
  struct stat st {};
  for (int i = 0; i < 100 && (stat(name.c_str(), &st) == 0 || (!kept_.empty() && kept_.back() == name)); ++i) {
    struct timespec ten_ms = {0, 10'000'000};
    nanosleep(&ten_ms, nullptr);
    name = output + "." + switch_output_timestamp();
  }
  return name;
}

Status SwitchedFiles::written(const std::string& path) {
  ++count_;
  kept_.push_back(path);
  while (max_files_ && kept_.size() > max_files_) {
    const std::string oldest = kept_.front();
    kept_.pop_front();
    if (remove(oldest.c_str()) != 0 && errno != ENOENT) return Error::from_errno("removing " + oldest);
    ++removed_;
  }
  return ok_status();
}

}  // namespace offwake
