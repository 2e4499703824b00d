// Elapsed time for measurements (set-up costs, build times): a steady clock in nanoseconds.
#pragma once

#include <chrono>
#include <cstdint>

namespace offwake {

inline uint64_t steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace offwake
