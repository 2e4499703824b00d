// A StackTraceSource for tests: stack id -> frames, as the BPF maps would return them.
#pragma once

#include <cerrno>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "callchain/stack_ids.h"

namespace offwake::test {

class StackTable : public StackTraceSource {
 public:
  std::map<uint64_t, std::vector<uint64_t>> stacks;
  Result<std::span<const uint64_t>> lookup(uint64_t id) const override {
    auto it = stacks.find(id);
    if (it == stacks.end()) return Error("no stack", ENOENT);
    return std::span<const uint64_t>(it->second);
  }
};

}  // namespace offwake::test
