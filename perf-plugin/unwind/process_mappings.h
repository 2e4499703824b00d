// Which table serves which code, per process: the executable file mappings of each process
// the recording follows, as /proc/PID/maps lists them at the start and MMAP2, COMM (exec),
// FORK and EXIT records report them after. For each change, the process's value of the BPF
// map unwind_processes (bpf-progs/unwind_row.h) is made anew; the caller writes it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "unwind/table_store.h"

namespace offwake::unwind {

// One executable mapping of a file.
struct CodeMapping {
  uint64_t start = 0, end = 0, pgoff = 0;
  uint64_t time = 0;  // when it was mapped (0: before the recording)
  BinaryRef binary;
  // Set by ProcessMappings when the mapping is added, or when its table is built: its table
  // and bias (rows == 0: none, frame pointers there).
  offwake_unwind_mapping resolved{};
  bool awaiting_table = false;  // its table is being built (TableStore::ready_or_build)
};

struct ProcessMappingStats {
  uint64_t processes = 0;      // processes given tables
  uint64_t mappings = 0;       // executable file mappings seen
  uint64_t without_table = 0;  // ... whose binary has no table (walked by frame pointers)
  uint64_t over_limit = 0;     // ... with a table, beyond OFFWAKE_UNWIND_MAX_MAPPINGS in their
                               // process when it was last written
  uint64_t awaited = 0;        // processes published without a table of theirs while it was built
  uint64_t longest_wait_ns = 0;  // the longest such wait, until the table was published
};

class ProcessMappings {
 public:
  // `publish(tgid, value)` writes a process's mappings; `publish(tgid, nullptr)` removes them.
  using PublishFn = std::function<void(uint32_t tgid, const offwake_unwind_process* value)>;
  ProcessMappings(TableStore& tables, PublishFn publish) : tables_(tables), publish_(std::move(publish)) {}

  // A mapping of code: replaces whatever the process had mapped over the same addresses.
  void map(uint32_t tgid, const CodeMapping& m);
  // Several at once (a process read from /proc), published once.
  void map_all(uint32_t tgid, const std::vector<CodeMapping>& ms);
  // exec at `time`: the old image is gone. Its new mappings follow, but records of different
  // CPUs come in no order: mappings made at or after `time` stay.
  void exec(uint32_t tgid, uint64_t time);
  // A new process starts with its parent's mappings (the BPF fork program copied them
  // already), unless records of its own came first.
  void fork(uint32_t parent, uint32_t child);
  void exit(uint32_t tgid);
  bool has(uint32_t tgid) const { return processes_.count(tgid) != 0; }
  // The mappings awaiting a table that the store has placed since get it, and their
  // processes are published again.
  void resolve_awaiting();

  ProcessMappingStats stats() const;

 private:
  void add(std::vector<CodeMapping>& list, CodeMapping m);
  // Its table and bias, if the table is ready; false while it is built.
  bool resolve(CodeMapping& m);
  void publish(uint32_t tgid);

  TableStore& tables_;
  PublishFn publish_;
  std::map<uint32_t, std::vector<CodeMapping>> processes_;
  std::map<uint32_t, uint64_t> over_limit_;  // by process, at its last write
  std::map<uint32_t, uint64_t> awaiting_;    // processes with mappings awaiting a table: since when
  uint32_t generation_ = 0;  // of the last value published (offwake_unwind_next_generation)
  ProcessMappingStats stats_;
};

}  // namespace offwake::unwind
