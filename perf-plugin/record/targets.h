// The processes and threads a recording is about (-p, -t), as /proc shows them: whether they
// exist, and whether they have exited. A process that has exited but that its parent has not
// reaped yet (a zombie) is still in /proc, and kill(pid, 0) still finds it: it is no target,
// as perf record refuses it (perf_event_open: No such process) and ends when its targets exit,
// not when they are reaped.
#pragma once

#include <cstdint>
#include <optional>

#include "util/result.h"

namespace offwake {

// A thread's process, as /proc says; nullopt if there is no such thread.
std::optional<uint32_t> tgid_of(uint32_t tid);

// Whether thread `tid` has exited: gone from /proc, or dead (a zombie).
bool thread_exited(uint32_t tid);
// Whether every thread of process `pid` has exited. A process whose main thread has exited
// (pthread_exit) shows that thread as a zombie while its other threads run: it lives on.
bool process_exited(uint32_t pid);

// -p's check: `pid` is a process that has not exited, and not a thread of another process.
Status check_process(uint32_t pid);
// -t's check: `tid` is a thread that has not exited.
Status check_thread(uint32_t tid);

}  // namespace offwake
