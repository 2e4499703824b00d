// libbpf's messages go through the tool's verbosity, and a load can keep what libbpf said
// (the verifier log) to put into its Error.
#pragma once

#include <string>

namespace offwake::bpf {

// 0: libbpf is silent on stderr (the default), 1: warnings and info, 2: also debug.
void set_libbpf_verbosity(int level);
int libbpf_verbosity();

// While alive, collects libbpf's warnings and info (whatever the verbosity), e.g. the
// verifier log of a program that failed to load. Not nestable; one at a time.
class LibbpfLogCapture {
 public:
  LibbpfLogCapture();
  ~LibbpfLogCapture();
  LibbpfLogCapture(const LibbpfLogCapture&) = delete;
  LibbpfLogCapture& operator=(const LibbpfLogCapture&) = delete;

  // What was collected so far, at most the last `max_bytes` (the verifier's verdict is at
  // the end of its log).
  std::string text(size_t max_bytes = 64 * 1024) const;

 private:
  std::string log_;
};

// From what libbpf said of a failed load (LibbpfLogCapture::text()), the program the verifier
// refused and its reason, the last line of its log before the statistics:
// "offwake_switch: combined stack size of 5 calls is 528. Too large". Empty if the log holds
// no refusal (no verifier log ends in it).
std::string verifier_refusal(const std::string& libbpf_log);

}  // namespace offwake::bpf
