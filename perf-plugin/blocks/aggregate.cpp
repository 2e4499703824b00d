#include "blocks/aggregate.h"

#include <cstring>

namespace offwake {

std::string comm_string(const char (&comm)[OFFWAKE_COMM_LEN]) {
  return std::string(comm, strnlen(comm, OFFWAKE_COMM_LEN));
}

uint64_t total_stack_losses(const offwake_counters& c) {
  uint64_t n = 0;
  for (int h = 0; h < 2; ++h)
    n += c.stack_collision[h] + c.stack_walk_failed[h] + c.stack_map_full[h] + c.stack_other_error[h];
  return n;
}

}  // namespace offwake
