#include "bpf/program_runs.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <fstream>

namespace offwake::bpf {

bool bpf_stats_sysctl_on() {
  std::ifstream in("/proc/sys/kernel/bpf_stats_enabled");
  int v = 0;
  return (in >> v) && v != 0;
}

Result<UniqueFd> enable_run_time_stats() {
  const int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd < 0) {
    // Not kUnavailable: the programs themselves may load, and another back end would not
    // measure them either.
    return Error("turning on the kernel's BPF run-time statistics for --bpf-stats (BPF_ENABLE_STATS needs "
                 "CAP_SYS_ADMIN; kernel.bpf_stats_enabled=1 does the same)",
                 -fd, ErrorKind::kOther);
  }
  return UniqueFd(fd);
}

Result<std::vector<ProgramRuns>> program_runs(const struct bpf_object* obj) {
  std::vector<ProgramRuns> out;
  struct bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj) {
    const int fd = bpf_program__fd(prog);
    if (fd < 0) continue;  // not loaded (autoload off)
    struct bpf_prog_info info {};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0)
      return Error::from_errno(std::string("reading the run-time statistics of BPF program ") +
                               bpf_program__name(prog));
    out.push_back({bpf_program__name(prog), info.run_cnt, info.run_time_ns, info.recursion_misses});
  }
  return out;
}

}  // namespace offwake::bpf
