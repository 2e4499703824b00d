// The user-space side of the BPF walker's unwind tables (bpf-progs/unwind_tables.bpf.h): the
// row array mapped into this process, where tables are written in place, and the per-process
// mappings, written and removed by tgid.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "unwind_row.h"
#include "util/result.h"

namespace offwake::bpf {

class OffwakeBpf;

class UnwindMaps {
 public:
  // Maps the loaded programs' unwind_rows array; they must have been loaded with tables.
  static Result<UnwindMaps> open(const OffwakeBpf& bpf);
  UnwindMaps(UnwindMaps&& o) noexcept;
  UnwindMaps& operator=(UnwindMaps&&) = delete;
  UnwindMaps(const UnwindMaps&) = delete;
  ~UnwindMaps();

  std::span<offwake_unwind_row> rows() const { return {rows_, capacity_}; }
  // A process's mappings (value), or their removal (nullptr), after a change of the tables
  // epoch (so that the walker's memos of its threads look them up again). A failure (the map
  // full) is counted: that process is walked by frame pointers.
  void publish(uint32_t tgid, const offwake_unwind_process* value);
  uint64_t publish_failures() const { return publish_failures_; }
  // The processes that asked for tables (walked without them: cfg.unwind_on_request), and
  // removing a request once served, so that the process can ask again. None when tables do
  // not come on request.
  std::vector<uint32_t> requests() const;
  void forget_request(uint32_t tgid);

 private:
  UnwindMaps(offwake_unwind_row* rows, uint32_t capacity, int processes_fd, int wanted_fd, uint32_t* epoch)
      : rows_(rows), capacity_(capacity), processes_fd_(processes_fd), wanted_fd_(wanted_fd), epoch_(epoch) {}

  offwake_unwind_row* rows_ = nullptr;
  uint32_t capacity_ = 0;
  int processes_fd_ = -1;      // owned by the skeleton
  int wanted_fd_ = -1;         // owned by the skeleton; -1: no requests
  uint32_t* epoch_ = nullptr;  // in the skeleton's .bss
  uint64_t publish_failures_ = 0;
};

}  // namespace offwake::bpf
