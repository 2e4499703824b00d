// Records that describe threads which already exist, read from /proc: COMM for each thread,
// FORK for each non-leader thread, MMAP2 (with build id) for each executable file mapping.
// They let perf symbolize samples of processes that exit before the report runs.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "perfdata/records.h"

namespace offwake {

using RecordCallback = std::function<Status(const perfdata::Record&)>;

// One line of /proc/PID/maps.
struct ProcMapping {
  uint64_t start = 0, end = 0, pgoff = 0;
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0;
  std::string perms;  // "r-xp"
  std::string path;
};

Result<std::vector<ProcMapping>> read_proc_maps(pid_t pid);

// The ids of the processes alive now (the numeric entries of /proc).
std::vector<pid_t> list_processes();

// Caches build ids by path so that a library mapped by many processes is read once.
class BuildIdCache {
 public:
  perfdata::BuildId get(const std::string& path);

 private:
  std::map<std::string, perfdata::BuildId> cache_;
};

// Emits the records for one process (all its threads). A process that vanished while being
// read is not an error: it yields what was read.
Status synthesize_process(pid_t pid, BuildIdCache& build_ids, const RecordCallback& emit);

// Every process on the machine.
Status synthesize_all_processes(BuildIdCache& build_ids, const RecordCallback& emit);

}  // namespace offwake
