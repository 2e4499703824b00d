// The BPF back end of perf offwake record: the programs pair switches and wakeups in the
// kernel and aggregate (or, with a timeline, send each block through a BPF ring buffer).
#pragma once

#include <memory>

#include "record/block_source.h"
#include "bpf/offwake_loader.h"
#include "util/result.h"

namespace offwake {

// The BPF back end. Fails with ErrorKind::kUnavailable when the programs cannot be loaded on
// this machine (no BTF, no CAP_BPF, a verifier refusal): the BPF programs, not the options,
// are why, and the tracepoint back end can take over.
Result<std::unique_ptr<BlockSource>> load_bpf_blocks(const bpf::LoaderOptions& options);

}  // namespace offwake
