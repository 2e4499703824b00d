// tests/e2e/symbols_target, running and blocked in st_leaf <- st_middle <- main for the
// lifetime of the object: a live process with known functions to describe in perf.data.
#pragma once

#include <sys/types.h>

#include <string>

namespace offwake::test {

class LiveTarget {
 public:
  LiveTarget();   // returns once the target said "ready"; throws if it did not start
  ~LiveTarget();  // closes its stdin, so it returns from read() and exits, and reaps it
  LiveTarget(const LiveTarget&) = delete;
  LiveTarget& operator=(const LiveTarget&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
};

}  // namespace offwake::test
