// perf's build-id cache on disk: where perf record puts the binaries it saw, and where every
// reader (perf 6.1, perf 6.12, perf offwake report) looks a binary up by its build id when the
// path it was mapped at holds nothing, or another file (a container's binary, an upgraded
// library). The layout, as `perf buildid-cache -a` writes it here (perf 6.1 and 6.12 alike):
//   DIR/<path>/<hex>/elf                      the binary (a hard link, or a copy)
//   DIR/.build-id/<hex[0,2)>/<hex[2,)>        a symbolic link to ../../<path>/<hex>
// and the readers open DIR/.build-id/<xx>/<rest>/elf (or the link itself, when an older perf
// made it point at a file). DIR is build_id_dir().
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "perfdata/records.h"
#include "synth/proc_maps.h"

namespace offwake {

// $PERF_BUILDID_DIR, which perf sets for the commands it runs (from its --buildid-dir option or
// its buildid.dir setting, $HOME/.debug by default), else $HOME/.debug as perf's default.
std::string build_id_dir();

// DIR/.build-id/xx/rest: the link readers follow.
std::string build_id_link(const std::string& dir, const perfdata::BuildId& id);
// The binary the cache holds for `id`, as the readers find it (the link's "elf", or the link
// itself when it names a file), or "" if it holds none.
std::string build_id_cached_file(const std::string& dir, const perfdata::BuildId& id);
// DIR/<path>/<hex>: the directory the link names; the binary is its "elf".
std::string build_id_entry(const std::string& dir, const std::string& path, const perfdata::BuildId& id);

// What became of one binary: cached now or before, else why not.
enum class CacheOutcome : uint8_t {
  kAdded,        // put into the cache by this recording
  kAlready,      // there already (by build id)
  kGone,         // no longer readable: its process and mapping are gone, and no file with its build id is left
  kPermission,   // reading it was refused
  kNotElf,       // not an ELF file (or not a regular file)
  kNoBuildId,    // an ELF file without a build id: readers cannot look it up
  kChanged,      // the file readable under its name now has another build id than the one mapped
  kOverCap,      // the recording's cap on bytes added was reached
  kWriteFailed,  // the cache directory could not be written
  kBadName,      // a name that is no absolute path, or has "." or ".." in it
};
inline constexpr int kCacheOutcomes = 10;
const char* cache_outcome_name(CacheOutcome o);

// Each distinct binary of a recording, counted once, by what became of it.
struct BuildIdCacheCounts {
  bool enabled = false;
  std::string dir;
  uint64_t max_bytes = 0;
  uint64_t added_bytes = 0;
  uint64_t by_outcome[kCacheOutcomes] = {};
  std::vector<std::string> failed;  // "path (pid N): why", for -v
  uint64_t count(CacheOutcome o) const { return by_outcome[static_cast<int>(o)]; }
  uint64_t not_cached() const;
};

// The cache as one recording fills it: binaries read through their processes (MappedFile), at
// most `max_bytes` of them added, each build id handled once (a failure is tried again when
// another mapping of the file comes, which may still be readable).
class BuildIdDir {
 public:
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{1} << 30;

  BuildIdDir(std::string dir, uint64_t max_bytes = kDefaultMaxBytes);

  // Puts the binary `f` maps into the cache. `expected`: the build id known for the mapping
  // (BuildIdCache: read through the process, or from a file of the same device and inode;
  // empty if none): the file read must have it, and then a file of the same name outside the
  // process (the host's) will do once the process is gone. Returns the build
  // id of the file read (or `expected`), empty if none.
  perfdata::BuildId add(const MappedFile& f, const perfdata::BuildId& expected);

  const std::string& dir() const { return dir_; }
  // The outcome of every binary seen so far, counted once each.
  BuildIdCacheCounts counts() const;

 private:
  struct Seen {
    CacheOutcome outcome;
    std::string detail;  // "path (pid N)"
  };
  CacheOutcome store(const MappedFile& f, const perfdata::BuildId& expected, perfdata::BuildId& found);
  CacheOutcome copy_in(int fd, uint64_t size, const std::string& path, const perfdata::BuildId& id);

  std::string dir_;
  uint64_t max_bytes_;
  uint64_t added_bytes_ = 0;
  std::map<std::string, Seen> seen_;  // by build id (hex), or "path\0dev:ino" without one
};

}  // namespace offwake
