#include "bpf/stack_trace_map.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <linux/bpf.h>

#include <string>

namespace offwake::bpf {

Result<StackTraceMap> StackTraceMap::from_fd(int map_fd) {
  bpf_map_info info{};
  __u32 len = sizeof(info);
  if (bpf_obj_get_info_by_fd(map_fd, &info, &len) != 0)
    return Error::from_errno("reading stack map info");
  if (info.type != BPF_MAP_TYPE_STACK_TRACE)
    return Error("map " + std::to_string(map_fd) + " is not a stack_trace map");
  if (info.value_size == 0 || info.value_size % sizeof(uint64_t) != 0)
    return Error("stack map value size " + std::to_string(info.value_size) + " is not a multiple of 8");
  int fd = fcntl(map_fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return Error::from_errno("duplicating stack map fd");
  return StackTraceMap(UniqueFd(fd), info.value_size / sizeof(uint64_t), info.max_entries);
}

Result<std::vector<uint64_t>> StackTraceMap::lookup(uint32_t id) const {
  std::vector<uint64_t> frames(max_depth_);
  if (bpf_map_lookup_elem(fd_.get(), &id, frames.data()) != 0)
    return Error::from_errno("looking up stack id " + std::to_string(id));
  size_t n = 0;
  while (n < frames.size() && frames[n] != 0) ++n;
  frames.resize(n);
  return frames;
}

}  // namespace offwake::bpf
