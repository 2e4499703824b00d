// Which processes a recording describes (COMM, FORK, EXIT, MMAP2), and when. A system-wide
// recording describes every process: those that exist at the start, read from /proc as perf
// synthesizes them (synthesize_process()), and those the kernel reports while recording. A
// recording about some processes (a command, -p, -t) describes, as `perf record -- cmd` does,
// the processes it is about, and any other process once a sample names it (a waker from
// outside, a hop of a chain); readers that count every described process (hotspot's summary)
// then count those. Until then the other processes' records are held here: what /proc said at
// the start, so that a waker that exits before the end keeps its name and maps, and what the
// kernel reported since. A FORK says which process a new one copied, and naming the child
// describes that process too.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "synth/proc_maps.h"

namespace offwake {

class ProcessDescriptions {
 public:
  // Held records are at most this many bytes: past them, every record held is written and
  // none is held any more (the recording describes every process, as a system-wide one).
  static constexpr size_t kDefaultHoldLimit = size_t{64} << 20;

  // Nothing yet; holding (a recording about some processes) or not (system-wide).
  explicit ProcessDescriptions(bool hold = true, size_t hold_limit = kDefaultHoldLimit)
      : holding_(hold), hold_limit_(hold_limit) {}

  // Every process in /proc now. `hold`: whether processes wait until a sample names them (a
  // recording about some processes), or are all written at once (system-wide).
  // `retain` (--switch-output): every record of the window is also kept, for carry_gone().
  // `namespaces` (--namespaces): each thread's PERF_RECORD_NAMESPACES too.
  static Result<ProcessDescriptions> take(BuildIdCache& build_ids, bool hold, const RecordCallback& emit,
                                          size_t hold_limit = kDefaultHoldLimit, bool retain = false,
                                          bool namespaces = false);

  // --switch-output, right after take(): the records that `previous` (the last window's
  // descriptions, retained) has of processes missing from this window's /proc (or found there
  // without their maps, exiting as it was read): they exited
  // during the last window or around the switch, and a sample of this window may still name
  // them (a waker that exited before the thread it woke ran, a thread that ended its block
  // and exited before /proc was read). Held like the rest (or written now, not holding), but
  // not retained: a process is carried into one window, no further, so that memory follows
  // the processes alive. Returns how many processes were carried.
  Result<size_t> carry_gone(const ProcessDescriptions& previous, const RecordCallback& emit);

  // A record the kernel reported while recording (COMM, MMAP2, FORK, EXIT, NAMESPACES; anything
  // else goes through): written now if its process is described or is_target(pid) (one the recording
  // is about), else held with its process.
  Status tracking(const perfdata::Record& r, const std::function<bool(uint32_t)>& is_target,
                  const RecordCallback& emit);

  // Writes, once, what is held of `pid`'s process, which is described from then on; then the
  // same for the process it was forked from while recording, and so on up.
  Status describe(uint32_t pid, const RecordCallback& emit);

  // Processes still held, and whether the hold limit was reached.
  size_t held() const { return held_.size(); }
  bool overflowed() const { return overflowed_; }

 private:
  Status hold(uint32_t pid, const perfdata::Record& r, const RecordCallback& emit);
  void retain(uint32_t pid, const perfdata::Record& r);
  Status release_all(const RecordCallback& emit);

  bool holding_ = true;
  bool overflowed_ = false;
  size_t hold_limit_ = kDefaultHoldLimit;
  size_t held_bytes_ = 0;
  std::map<uint32_t, std::vector<perfdata::Record>> held_;
  std::unordered_set<uint32_t> described_;
  std::unordered_map<uint32_t, uint32_t> forked_from_;  // child pid -> parent pid
  // --switch-output: this window's records by process (what /proc said, what the kernel
  // reported), up to hold_limit_ bytes.
  bool retaining_ = false;
  size_t retained_bytes_ = 0;
  std::unordered_map<uint32_t, std::vector<perfdata::Record>> retained_;
};

}  // namespace offwake
