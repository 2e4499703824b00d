// Cgroups as the readers show them: the paths a recording's PERF_RECORD_CGROUP records give the
// ids of its samples (PERF_SAMPLE_CGROUP, and the waker's in the offwake-time sample's raw
// data), the container a path belongs to, and which paths --cgroup selects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "perfdata/records.h"

namespace offwake::report {

// What a cgroup id with no PERF_RECORD_CGROUP in the recording is called, as perf calls it.
inline constexpr const char* kUnknownCgroup = "unknown";

class CgroupTable {
 public:
  // Takes a PERF_RECORD_CGROUP; passes over any other record.
  void observe(const perfdata::Record& r);
  // The path of cgroup `id`: "" for 0 (the sample has none: an interrupt waker, a recording
  // without cgroups), kUnknownCgroup for an id no record named.
  const std::string& path(uint64_t id) const;

 private:
  std::unordered_map<uint64_t, std::string> paths_;
};

// The container a cgroup belongs to: its path's last component that looks like a container
// id, 64 hexadecimal digits, alone or after a runtime's prefix ending in '-' or ':' and before
// a '.' suffix ("docker-<id>.scope", "cri-containerd-<id>.scope", "crio-<id>",
// "/kubepods/burstable/pod<uid>/<id>"). "" when no component does.
std::string container_id(std::string_view cgroup_path);

// Whether `path` is the cgroup `under` or below it: "/a" holds "/a" and "/a/b", not "/ab".
// `under` may end in '/'; "/" holds every path.
bool cgroup_under(std::string_view path, std::string_view under);

}  // namespace offwake::report
