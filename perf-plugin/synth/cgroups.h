// The cgroups a recording's samples name (PERF_SAMPLE_CGROUP), described as perf record
// --all-cgroups describes them: a PERF_RECORD_CGROUP per cgroup v2 directory with its id and
// its path below the cgroup2 mount ("/" for the root), every one that exists at the start
// (time 0, so that readers take them before any sample), those the kernel reports as they are
// made (the tracking event's attr.cgroup), and a cgroup a sample names that neither described,
// looked up again before that sample is written. A cgroup gone before it could be named is
// counted; perf shows its samples' cgroup as "unknown".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "synth/proc_maps.h"
#include "util/result.h"

namespace offwake {

// Where the cgroup2 hierarchy is mounted in this mount namespace, from one /proc/self/mountinfo
// text: the mount point, and the hierarchy's directory it shows ("/" unless the mount is a
// view of a subtree). Nullopt when there is no cgroup2 mount.
struct Cgroup2Mount {
  std::string mount_point;
  std::string root = "/";
};
std::optional<Cgroup2Mount> find_cgroup2_mount(const std::string& mountinfo);
// The same from this process's /proc/self/mountinfo.
std::optional<Cgroup2Mount> cgroup2_mount();

// The directory of a cgroup as -G names it: the directory itself, or the cgroup's path as
// perf shows it ('perf report --sort cgroup', PERF_RECORD_CGROUP: '/system.slice/foo.service')
// under the cgroup2 mount. `path` as given when it is neither.
std::string cgroup_dir(const std::string& path, const std::optional<Cgroup2Mount>& mount = cgroup2_mount());

// A cgroup v2 directory's id: what the kernel puts in PERF_SAMPLE_CGROUP and
// bpf_get_current_cgroup_id() returns (its kernfs node id, the file handle's 8 bytes).
Result<uint64_t> cgroup_id_of(const std::string& dir);

class CgroupNames {
 public:
  // Without a cgroup2 mount, no cgroup is described and every one a sample names is counted.
  explicit CgroupNames(std::optional<Cgroup2Mount> mount = cgroup2_mount()) : mount_(std::move(mount)) {}

  // A file starts: every cgroup that exists now is written into it (the ones a sample of
  // the file names later, and gone by then, too: from what is known).
  Status begin_file(const RecordCallback& emit);
  // A PERF_RECORD_CGROUP the kernel wrote into the current file: known, and described in it.
  void observe(const perfdata::CgroupRecord& r);
  // Before a sample that names cgroup `id` (0: none) is written: its record, once per file.
  Status describe(uint64_t id, const RecordCallback& emit);

  // In the current file: cgroups described, and ids named by samples but found nowhere.
  uint64_t described() const { return written_.size(); }
  uint64_t unnamed() const { return unnamed_.size(); }

 private:
  // Walks the hierarchy, learning every directory's id and path.
  void scan();
  Status write(uint64_t id, const std::string& path, const RecordCallback& emit);

  std::optional<Cgroup2Mount> mount_;
  std::map<uint64_t, std::string> known_;  // id -> path, as seen by any scan or the kernel
  std::set<uint64_t> written_;             // described in the current file
  std::set<uint64_t> unnamed_;             // named by a sample, in no scan since
};

}  // namespace offwake
