// Reads stacks back from the BPF maps that hold them: the BPF_MAP_TYPE_STACK_TRACE map that
// bpf_get_stackid() fills (ids below 2^32), and the stack store, the hash map of whole stacks
// that the programs walk or copy themselves (ids with OFFWAKE_STORE_ID set).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "callchain/stack_ids.h"
#include "util/fd.h"
#include "util/result.h"

namespace offwake::bpf {

class StackTraceMap final : public StackTraceSource {
 public:
  // Takes its own references to the maps (dups of the fds), so it may outlive the loader.
  // The depth is the stack_trace map's value_size / 8, read from the kernel. store_fd may be
  // -1: then store ids are not found. store_epoch: the programs' stack_store_epoch, which
  // end_window() changes after it empties the store (nullptr: the store is never emptied).
  static Result<StackTraceMap> from_fds(int stack_trace_fd, int store_fd, uint32_t* store_epoch = nullptr);

  // Frames of stack `id`, leaf first: a stack_trace entry up to its first zero entry, or
  // a stored stack's frames. Each id is read from the kernel once: an id names the same stack
  // for the life of the maps (no BPF_F_REUSE_STACKID; a stored stack's id is a hash of its
  // frames, so one emptied and stored again has its id again), and a recording's samples share
  // few stacks among many keys. A stored stack emptied by the last two end_window()s is found
  // among those it kept; one emptied before fails with kStackEmptied.
  Result<std::span<const uint64_t>> lookup(uint64_t id) const override;

  // --switch-output, after each window's file: the cache is emptied, and the stacks are read
  // again from the kernel when asked for, so that it holds a window's stacks at most. Spans
  // handed out before are no longer valid. If the window found the store half full or more,
  // the stacks it held that no sample of the window asked for are deleted from it, kept here
  // for two such ends of windows (a block open across the switch may still name one), and
  // the programs' stack_store_epoch changes, which makes their memos check that a stored id
  // they replay is still there (stored_id_current(), bpf-progs/stacks.bpf.h). Without that, a
  // recording that never ends fills the store and loses every new stack from then on.
  Status end_window();

  // How often end_window() emptied the store, and of how many stacks.
  uint64_t store_emptied() const { return store_emptied_; }
  uint64_t stacks_emptied() const { return stacks_emptied_; }

  uint32_t max_depth() const { return max_depth_; }
  uint32_t max_entries() const { return max_entries_; }
  int fd() const { return fd_.get(); }

 private:
  StackTraceMap(UniqueFd fd, UniqueFd store, uint32_t max_depth, uint32_t max_entries, uint32_t store_value_size,
                uint32_t store_max_entries, uint32_t* store_epoch)
      : fd_(std::move(fd)),
        store_(std::move(store)),
        max_depth_(max_depth),
        max_entries_(max_entries),
        store_value_size_(store_value_size),
        store_max_entries_(store_max_entries),
        store_epoch_(store_epoch) {}

  Result<std::vector<uint64_t>> read(uint64_t id) const;
  // Reads the whole stack store into the cache, in batches: one system call per stack would
  // take seconds for 100,000 stacks.
  Status preload_store() const;
  // Deletes `ids` from the kernel's store, in batches, and returns how many of the first were
  // deleted: all, unless a batch failed (then `status` says why).
  size_t delete_stored(const std::vector<uint64_t>& ids, Status& status);

  UniqueFd fd_;
  UniqueFd store_;
  // unique_ptr: the map stays movable with its cache.
  // Node-based: a span handed out stays valid as the cache grows, and when the map moves.
  mutable std::unordered_map<uint64_t, std::vector<uint64_t>> cache_;
  mutable bool store_loaded_ = false;
  // The stored ids lookup() was asked for in this window.
  mutable std::unordered_set<uint64_t> asked_;
  // The stacks the last two end_window()s emptied from the store, the latest first.
  std::unordered_map<uint64_t, std::vector<uint64_t>> emptied_[2];
  uint32_t max_depth_;
  uint32_t max_entries_;
  uint32_t store_value_size_;
  uint32_t store_max_entries_;
  uint32_t* store_epoch_;
  uint64_t store_emptied_ = 0, stacks_emptied_ = 0;
};

}  // namespace offwake::bpf
