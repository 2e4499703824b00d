// `perf offwake record` runs as a child of perf, which forwards it no signal: killing perf
// (SIGTERM, SIGKILL, a closed terminal) would leave the recorder running system-wide, BPF
// attached, forever. So when its parent is perf, the recorder asks the kernel for `sig` when
// that parent dies, and handles it as a stop: the file is finished, the programs detached.
#pragma once

namespace offwake {

// Call after the handler for `sig` is installed. Returns whether the parent is perf (and is
// now followed). If perf is already gone, `sig` is raised at once.
bool follow_parent_perf(int sig);

}  // namespace offwake
