// A thread's namespaces as perf record --namespaces describes them (PERF_RECORD_NAMESPACES):
// the device and inode of each /proc/PID/task/TID/ns file, in the kernel's order. Two threads
// in one pid namespace have the same pid entry; a container's processes share theirs, and
// readers tell them from the host's by it (perf report --sort cgroup_id uses the cgroup one).
#pragma once

#include <sys/types.h>

#include <optional>

#include "perfdata/records.h"

namespace offwake {

// The namespace files, in the order of the record's entries (NET_NS_INDEX ... CGROUP_NS_INDEX
// of linux/perf_event.h).
inline constexpr const char* kNamespaceNames[] = {"net", "uts", "ipc", "pid", "user", "mnt", "cgroup"};

// The record of thread `tid` of process `pid` from /proc; an entry whose file cannot be read
// (a kernel without that namespace) is 0/0, as perf writes it. Nullopt when the thread is gone.
std::optional<perfdata::NamespacesRecord> read_namespaces(pid_t pid, pid_t tid);

}  // namespace offwake
