// Reads stacks back from the BPF maps that hold them: the BPF_MAP_TYPE_STACK_TRACE map that
// bpf_get_stackid() fills (ids below 2^32), and the stack store, the hash map of whole stacks
// that the programs walk or copy themselves (ids with OFFWAKE_STORE_ID set).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "callchain/stack_ids.h"
#include "util/fd.h"
#include "util/result.h"

namespace offwake::bpf {

class StackTraceMap final : public StackTraceSource {
 public:
  // Takes its own references to the maps (dups of the fds), so it may outlive the loader.
  // The depth is the stack_trace map's value_size / 8, read from the kernel. store_fd may be
  // -1: then store ids are not found.
  static Result<StackTraceMap> from_fds(int stack_trace_fd, int store_fd);

  // Frames of stack `id`, leaf first: a stack_trace entry up to its first zero entry, or
  // a stored stack's frames. Each id is read from the kernel once: an id names the same stack
  // for the life of the maps (no BPF_F_REUSE_STACKID; the store never deletes), and a
  // recording's samples share few stacks among many keys.
  Result<std::span<const uint64_t>> lookup(uint64_t id) const override;

  // Empties the cache (--switch-output, after each window's file): the stacks are read again
  // from the kernel when asked for, and the cache holds a window's stacks at most. Spans
  // handed out before are no longer valid.
  void forget() {
    std::unordered_map<uint64_t, std::vector<uint64_t>>().swap(cache_);
    store_loaded_ = false;
  }

  uint32_t max_depth() const { return max_depth_; }
  uint32_t max_entries() const { return max_entries_; }
  int fd() const { return fd_.get(); }

 private:
  StackTraceMap(UniqueFd fd, UniqueFd store, uint32_t max_depth, uint32_t max_entries, uint32_t store_value_size)
      : fd_(std::move(fd)),
        store_(std::move(store)),
        max_depth_(max_depth),
        max_entries_(max_entries),
        store_value_size_(store_value_size) {}

  Result<std::vector<uint64_t>> read(uint64_t id) const;
  // Reads the whole stack store into the cache, in batches: one system call per stack would
  // take seconds for 100,000 stacks.
  Status preload_store() const;

  UniqueFd fd_;
  UniqueFd store_;
  // unique_ptr: the map stays movable with its cache.
  // Node-based: a span handed out stays valid as the cache grows, and when the map moves.
  mutable std::unordered_map<uint64_t, std::vector<uint64_t>> cache_;
  mutable bool store_loaded_ = false;
  uint32_t max_depth_;
  uint32_t max_entries_;
  uint32_t store_value_size_;
};

}  // namespace offwake::bpf
