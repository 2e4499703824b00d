#include "bpf/stack_trace_map.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/bpf.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "offwake.h"

namespace offwake::bpf {
namespace {

Result<bpf_map_info> map_info(int fd, const char* what) {
  bpf_map_info info{};
  __u32 len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) return Error::from_errno(std::string("reading ") + what + " info");
  return info;
}

Result<UniqueFd> dup_fd(int fd, const char* what) {
  int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (d < 0) return Error::from_errno(std::string("duplicating ") + what + " fd");
  return UniqueFd(d);
}

}  // namespace

Result<StackTraceMap> StackTraceMap::from_fds(int stack_trace_fd, int store_fd, uint32_t* store_epoch) {
  auto info = map_info(stack_trace_fd, "stack map");
  if (!info) return info.error();
  if (info->type != BPF_MAP_TYPE_STACK_TRACE)
    return Error("map " + std::to_string(stack_trace_fd) + " is not a stack_trace map");
  if (info->value_size == 0 || info->value_size % sizeof(uint64_t) != 0)
    return Error("stack map value size " + std::to_string(info->value_size) + " is not a multiple of 8");
  auto fd = dup_fd(stack_trace_fd, "stack map");
  if (!fd) return fd.error();
  UniqueFd store;
  uint32_t store_value_size = 0, store_max_entries = 0;
  if (store_fd >= 0) {
    auto sinfo = map_info(store_fd, "stack store");
    if (!sinfo) return sinfo.error();
    if (sinfo->type != BPF_MAP_TYPE_HASH || sinfo->key_size != sizeof(uint64_t) ||
        sinfo->value_size < offsetof(offwake_stored_stack, ips) ||
        sinfo->value_size > sizeof(offwake_stored_stack))
      return Error("map " + std::to_string(store_fd) + " is not a stack store");
    auto s = dup_fd(store_fd, "stack store");
    if (!s) return s.error();
    store = std::move(s).value();
    store_value_size = sinfo->value_size;
    store_max_entries = sinfo->max_entries;
  }
  return StackTraceMap(std::move(fd).value(), std::move(store), info->value_size / sizeof(uint64_t),
                       info->max_entries, store_value_size, store_max_entries, store_epoch);
}

Result<std::span<const uint64_t>> StackTraceMap::lookup(uint64_t id) const {
  const bool stored = id & OFFWAKE_STORE_ID;
  if (stored && store_.valid() && !store_loaded_) {
    store_loaded_ = true;
    OFFWAKE_TRY(preload_store());
  }
  if (stored) asked_.insert(id);
  if (auto it = cache_.find(id); it != cache_.end()) return std::span<const uint64_t>(it->second);
  if (stored) {
    for (const auto& emptied : emptied_) {
      if (auto it = emptied.find(id); it != emptied.end()) return std::span<const uint64_t>(it->second);
    }
  }
  auto frames = read(id);
  if (!frames) return frames.error();
  auto [it, fresh] = cache_.emplace(id, std::move(frames).value());
  return std::span<const uint64_t>(it->second);
}

Status StackTraceMap::end_window() {
  // The cache's stored stacks are the store as this window read it (preload_store()).
  std::vector<uint64_t> unused;
  if (store_epoch_ && store_loaded_) {
    size_t stored = 0;
    for (const auto& [id, frames] : cache_) {
      if (!(id & OFFWAKE_STORE_ID)) continue;
      ++stored;
      if (!asked_.count(id)) unused.push_back(id);
    }
    if (uint64_t{stored} * 2 < store_max_entries_) unused.clear();
  }
  Status deleted = ok_status();
  if (!unused.empty()) {
    // Those deleted, even if a batch failed, are kept here, and the programs told.
    const size_t n = delete_stored(unused, deleted);
    emptied_[1] = std::move(emptied_[0]);
    emptied_[0].clear();
    for (size_t i = 0; i < n; ++i) {
      auto node = cache_.extract(unused[i]);
      if (node) emptied_[0].insert(std::move(node));
    }
    if (n) {
      __atomic_fetch_add(store_epoch_, 1, __ATOMIC_SEQ_CST);
      ++store_emptied_;
      stacks_emptied_ += n;
    }
  }
  std::unordered_map<uint64_t, std::vector<uint64_t>>().swap(cache_);
  std::unordered_set<uint64_t>().swap(asked_);
  store_loaded_ = false;
  return deleted;
}

size_t StackTraceMap::delete_stored(const std::vector<uint64_t>& ids, Status& status) {
  constexpr size_t kBatch = 1024;
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  size_t done = 0;
  while (done < ids.size()) {
    __u32 count = static_cast<__u32>(std::min(kBatch, ids.size() - done));
    const __u32 asked = count;
    if (bpf_map_delete_batch(store_.get(), ids.data() + done, &count, &opts) != 0) {
      status = Error::from_errno("emptying the stack store");
      return done + std::min(count, asked);
    }
    done += asked;
  }
  return done;
}

Status StackTraceMap::preload_store() const {
  constexpr __u32 kBatch = 1024;
  const size_t value = store_value_size_;
  const uint32_t room = (store_value_size_ - offsetof(offwake_stored_stack, ips)) / sizeof(uint64_t);
  std::vector<uint64_t> keys(kBatch);
  std::vector<uint8_t> values(kBatch * value);
  uint64_t cursor = 0;  // hash maps use a 4-byte bucket cursor
  void* in_batch = nullptr;
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  for (;;) {
    __u32 count = kBatch;
    int err = bpf_map_lookup_batch(store_.get(), in_batch, &cursor, keys.data(), values.data(), &count, &opts);
    int e = errno;
    for (__u32 i = 0; i < count; ++i) {
      offwake_stored_stack st;
      std::memcpy(&st, values.data() + i * value, value);
      if (st.nr > room) return Error("stored stack claims " + std::to_string(st.nr) + " frames", EINVAL);
      cache_.emplace(keys[i], std::vector<uint64_t>(st.ips, st.ips + st.nr));
    }
    if (err != 0) {
      if (e == ENOENT) return ok_status();
      return Error("reading the stack store", e);
    }
    in_batch = &cursor;
  }
}

Result<std::vector<uint64_t>> StackTraceMap::read(uint64_t id) const {
  if (id & OFFWAKE_STORE_ID) {
    if (!store_.valid()) return Error("stack " + std::to_string(id) + " is in a stack store that was not given", EINVAL);
    offwake_stored_stack st{};
    if (bpf_map_lookup_elem(store_.get(), &id, &st) != 0) {
      // Only end_window() deletes from the store: a stack not there was emptied by it.
      if (errno == ENOENT)
        return Error("stored stack " + std::to_string(id & OFFWAKE_STORE_HASH_MASK) + " was emptied from the store",
                     kStackEmptied);
      return Error::from_errno("looking up stored stack " + std::to_string(id & OFFWAKE_STORE_HASH_MASK));
    }
    const uint32_t room = (store_value_size_ - offsetof(offwake_stored_stack, ips)) / sizeof(uint64_t);
    if (st.nr > room) return Error("stored stack claims " + std::to_string(st.nr) + " frames", EINVAL);
    return std::vector<uint64_t>(st.ips, st.ips + st.nr);
  }
  // Stack map keys are u32; a larger id would silently truncate to some other stack.
  if (id > UINT32_MAX) return Error("stack id " + std::to_string(id) + " is out of range", ERANGE);
  const uint32_t key = static_cast<uint32_t>(id);
  std::vector<uint64_t> frames(max_depth_);
  if (bpf_map_lookup_elem(fd_.get(), &key, frames.data()) != 0)
    return Error::from_errno("looking up stack id " + std::to_string(id));
  size_t n = 0;
  while (n < frames.size() && frames[n] != 0) ++n;
  frames.resize(n);
  return frames;
}

}  // namespace offwake::bpf
