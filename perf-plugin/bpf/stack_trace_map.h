// Reads stacks back from the BPF_MAP_TYPE_STACK_TRACE map that bpf_get_stackid() fills.
#pragma once

#include <cstdint>
#include <vector>

#include "callchain/stack_ids.h"
#include "util/fd.h"
#include "util/result.h"

namespace offwake::bpf {

class StackTraceMap final : public StackTraceSource {
 public:
  // Takes its own reference to the map (a dup of map_fd), so it may outlive the loader.
  // The depth is the map's value_size / 8, read from the kernel.
  static Result<StackTraceMap> from_fd(int map_fd);

  // Frames of stack `id`, leaf first, up to the first zero entry.
  Result<std::vector<uint64_t>> lookup(uint32_t id) const override;

  uint32_t max_depth() const { return max_depth_; }
  uint32_t max_entries() const { return max_entries_; }
  int fd() const { return fd_.get(); }

 private:
  StackTraceMap(UniqueFd fd, uint32_t max_depth, uint32_t max_entries)
      : fd_(std::move(fd)), max_depth_(max_depth), max_entries_(max_entries) {}

  UniqueFd fd_;
  uint32_t max_depth_;
  uint32_t max_entries_;
};

}  // namespace offwake::bpf
