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

// A file a process maps, as the process names it (in its own mount namespace, which may not be
// ours: a container's /app/server is no file of the host's).
struct MappedFile {
  pid_t pid = 0;
  uint64_t start = 0, end = 0;  // the mapping
  std::string path;
  // The names it can be read by from here while its process lives, best first: the mapping
  // itself (/proc/PID/map_files/START-END, the very file, even deleted or replaced since), then
  // the path in the process's root (/proc/PID/root/PATH).
  std::vector<std::string> sources() const;
};
MappedFile mapped_file(pid_t pid, const ProcMapping& m);
MappedFile mapped_file(const perfdata::Mmap2Record& m);

// Whether `name` (a mapping's file name) names a file: an absolute path, not a pseudo file
// ("//anon", "[vdso]", "/memfd:x (deleted)" is one, "/dev/zero" and "/SYSV0" are not binaries).
bool names_binary(const std::string& name);

// Caches build ids so that a library mapped by many processes is read once: by path (a file of
// ours), or by the device and inode of a mapped file (read through its process).
class BuildIdCache {
 public:
  perfdata::BuildId get(const std::string& path);
  // The build id of what `f` maps, read through its process; `maj`, `min`, `ino` identify the
  // file (ino 0: unknown, then it is read each time).
  perfdata::BuildId get(const MappedFile& f, uint32_t maj, uint32_t min, uint64_t ino);

 private:
  std::map<std::string, perfdata::BuildId> cache_;
};

// Emits the records for one process (all its threads). A process that vanished while being
// read is not an error: it yields what was read.
Status synthesize_process(pid_t pid, BuildIdCache& build_ids, const RecordCallback& emit);

// Every process on the machine.
Status synthesize_all_processes(BuildIdCache& build_ids, const RecordCallback& emit);

}  // namespace offwake
