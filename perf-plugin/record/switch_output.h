// --switch-output, as perf record has it: when a recording ends a window and starts the next
// (on SIGUSR2, every so many seconds, or once its file has grown to a size), what each
// window's file is called (the -o name plus perf's timestamp, .YYYYmmddHHMMSScc), and
// --switch-max-files: only the newest N files of the recording are kept.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "util/result.h"

namespace offwake {

struct SwitchOutputSpec {
  enum class Mode { kOff, kSignal, kTime, kSize };
  Mode mode = Mode::kOff;
  uint64_t interval_ns = 0;  // kTime
  uint64_t bytes = 0;        // kSize
};

// "signal", a time with a unit s, m, h or d ("10s", "1m"), or a size with a unit B,
// K, M or G ("100M"); a usage error for anything else.
Result<SwitchOutputSpec> parse_switch_output(const std::string& value);

// --switch-max-files: a count from 1 (0 when not given: keep every file).
Result<uint64_t> parse_switch_max_files(const std::string& value);

// perf's timestamp of now (local time, to the hundredth of a second): "2026120214553012".
std::string switch_output_timestamp();

// The files a recording has written, newest last; with a limit, the oldest is deleted when a
// new one makes one too many, as perf record does.
class SwitchedFiles {
 public:
  explicit SwitchedFiles(uint64_t max_files) : max_files_(max_files) {}

  // A name for the next file from `output` and now's timestamp, unused on disk.
  std::string next_name(const std::string& output) const;
  // `path` is written; the oldest files beyond the limit are removed.
  Status written(const std::string& path);
  uint64_t count() const { return count_; }
  uint64_t removed() const { return removed_; }

 private:
  uint64_t max_files_;
  std::deque<std::string> kept_;
  uint64_t count_ = 0, removed_ = 0;
};

}  // namespace offwake
