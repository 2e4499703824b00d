// The unwind tables of a recording, one per binary (by build id, else by path and inode) and
// shared by every process that maps it, placed one after another in the row memory the BPF
// walker searches (the mmap of bpf-progs' unwind_rows map). Rows once placed never move or
// change: a process's mappings can name them at any time after. Bounded by that memory: a
// binary that does not fit is counted, named, and walked by frame pointers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "unwind/table_builder.h"
#include "unwind/unwind_table.h"

namespace offwake::unwind {

// A binary as a process maps it.
struct BinaryRef {
  std::string path;        // as the process names it (shown in messages)
  std::string open_path;   // where to read it now (/proc/PID/root/..., map_files, or path)
  perfdata::BuildId build_id;  // from the MMAP2 record, if it had one
  uint64_t dev = 0, ino = 0;   // the key without a build id
};

// A table in row memory; rows == 0 when the binary has none (then `why`).
struct StoredTable {
  uint32_t first_row = 0, rows = 0;
  UnwindTable table;  // without its rows once stored (they are in row memory)
  std::string why;
};

struct TableStoreStats {
  uint64_t tables = 0;        // tables stored
  uint64_t rows = 0;          // their rows
  uint64_t build_ns = 0;      // time reading .eh_frame and storing rows
  uint64_t no_rows = 0;       // binaries without any row (no .eh_frame, ...)
  uint64_t unreadable = 0;    // binaries that could not be read
  uint64_t too_large = 0;     // binaries whose table did not fit the row memory
  std::vector<std::string> failed;  // "path: why" of each of the three above, for -v
  uint64_t built_beside = 0;        // tables built on the builder's threads (ready_or_build)
};

class TableStore {
 public:
  // `rows`: the memory tables are placed in, BPF-shared; empty for a store that only builds.
  explicit TableStore(std::span<offwake_unwind_row> rows) : memory_(rows) {}

  // The table of `binary`, built and placed on first use; never null. Tables of binaries
  // that could not be read or placed have rows == 0 and are not retried.
  const StoredTable* get(const BinaryRef& binary);
  // Builds the tables of many binaries at once, on `threads` threads (placed in the order
  // given): the set-up of a system-wide recording.
  void prepare(const std::vector<BinaryRef>& binaries, unsigned threads);

  // From now on, ready_or_build() builds on `threads` threads of a TableBuilder.
  void build_beside(unsigned threads) { builder_.emplace(threads); }
  // The table of `binary` if it is ready; else null, and it is built (on the builder's threads,
  // or now, without them: then never null).
  const StoredTable* ready_or_build(const BinaryRef& binary);
  // Places the tables the builder finished (with `all`, once it has finished every one asked
  // for); whether there were any.
  bool place_built(bool all = false);

  const TableStoreStats& stats() const { return stats_; }
  uint64_t bytes() const { return stats_.rows * sizeof(offwake_unwind_row); }
  uint64_t capacity_bytes() const { return memory_.size() * sizeof(offwake_unwind_row); }

 private:
  static std::string key_of(const BinaryRef& b);
  const StoredTable* place(const std::string& key, const BinaryRef& b, Result<UnwindTable> built, uint64_t ns);

  std::span<offwake_unwind_row> memory_;
  uint32_t used_ = 0;
  // By key, and by build id too once read from the file: a binary listed by /proc (no build
  // id) and named by an MMAP2 record (build id only) is one table.
  std::map<std::string, const StoredTable*> tables_;
  std::vector<std::unique_ptr<StoredTable>> owned_;
  std::map<std::string, BinaryRef> building_;  // by key: asked of the builder, not yet placed
  TableStoreStats stats_;
  std::optional<TableBuilder> builder_;  // last: its threads stop before the rest goes
};

}  // namespace offwake::unwind
