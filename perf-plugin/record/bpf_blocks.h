// The BPF back end of perf offwake record: the programs pair switches and wakeups in the
// kernel and aggregate (or, with a timeline, send each block through a BPF ring buffer).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "record/block_source.h"
#include "bpf/offwake_loader.h"
#include "util/result.h"

namespace offwake {

// The BPF back end. Fails with ErrorKind::kUnavailable when the programs cannot be loaded on
// this machine (no BTF, no CAP_BPF, a verifier refusal): the BPF programs, not the options,
// are why, and the tracepoint back end can take over.
// With options.unwind_tables, the processes whose code gets unwind tables before the programs
// attach: `seed_pids`, or every process if `seed_all`.
struct UnwindSeed {
  std::vector<uint32_t> pids;
  bool all = false;
  std::string command;  // a command about to run (its path): its tables are prepared
};
Result<std::unique_ptr<BlockSource>> load_bpf_blocks(const bpf::LoaderOptions& options, UnwindSeed seed = {});

}  // namespace offwake
