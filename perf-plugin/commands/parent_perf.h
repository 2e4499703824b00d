// `perf offwake ...` runs perf-offwake as a child of perf. Two things follow from that.
//
// `perf offwake record` runs as a child of perf, which forwards it no signal: killing perf
// (SIGTERM, SIGKILL, a closed terminal) would leave the recorder running system-wide, BPF
// attached, forever. So when its parent is perf, the recorder asks the kernel for `sig` when
// that parent dies, and handles it as a stop: the file is finished, the programs detached.
#pragma once

namespace offwake {

// Call after the handler for `sig` is installed. Returns whether the parent is perf (and is
// now followed). If perf is already gone, `sig` is raised at once.
bool follow_parent_perf(int sig);

// perf runs external commands with libsubcmd, which takes an exit status of 127 to mean that
// the command itself was not found: perf then says "'offwake' is not a perf-command" and
// exits 1. So a 127 (a command not found, or a command's own 127) is passed to perf as 255,
// the status `perf record` gives for a workload that cannot run; every other status passes
// unchanged, and run directly, perf-offwake exits 127 as a shell does.
int exit_status_for_parent(int status);

}  // namespace offwake
