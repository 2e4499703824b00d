// What the loaded BPF programs cost, as the kernel counts it (struct bpf_prog_info: run_cnt and
// run_time_ns). The kernel counts only while its run-time statistics are on: while
// kernel.bpf_stats_enabled is 1, or while someone holds the fd of BPF_ENABLE_STATS
// (--bpf-stats). Either way every BPF program on the machine then pays two clock reads a run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/fd.h"
#include "util/result.h"

struct bpf_object;

namespace offwake::bpf {

struct ProgramRuns {
  std::string name;
  uint64_t runs = 0;
  uint64_t ns = 0;
  uint64_t recursion_misses = 0;  // runs the kernel skipped: a BPF program was already running on
                                  // that CPU (counted whether or not statistics are on)
};

// Whether kernel.bpf_stats_enabled is 1 now (false if it cannot be read).
bool bpf_stats_sysctl_on();

// Turns the kernel's run-time statistics on for as long as the returned fd is open. An error
// of kind kOther if the kernel refuses (no CAP_SYS_ADMIN, a kernel before 5.8).
Result<UniqueFd> enable_run_time_stats();

// Each loaded program of `obj` and its runs and time so far, in the object's order.
Result<std::vector<ProgramRuns>> program_runs(const struct bpf_object* obj);

}  // namespace offwake::bpf
