// The default output of perf offwake report: a table of blocked stacks by time, each with its
// top wakers (under each waker the rest of its wakeup chain, a line per hop, and why the
// chain ends; a waker's cgroup when it is not the blocked thread's), optionally grouped by
// cgroup, and the recording's loss counters.
#pragma once

#include <cstdio>
#include <string>

#include "report/folded.h"
#include "report/profile.h"

namespace offwake::report {

enum class SortKey { kTime, kCount, kAvg, kMax };

struct StdioOptions {
  SortKey sort = SortKey::kTime;
  size_t wakers_per_stack = 3;
  bool per_thread = false;  // a row per blocked thread (its stacks summed), not per stack
  bool by_cgroup = false;   // --sort cgroup: the rows grouped by the blocked thread's cgroup
  std::string input;  // named in the header
};

// What a waker line shows where the waker has no stack: none was recorded, or none was taken
// (Stack::waker_stacks_not_taken: woken before the block reached --min-block or its sampling
// threshold).
inline constexpr const char* kNoStackLabel = "[no stack]";
inline constexpr const char* kStacksNotTakenLabel = kStacksNotTaken;  // as --folded has it

void print_stdio_report(FILE* out, const Profile& profile, const StdioOptions& options);

// "12.34 ms" and the like, as the bundled scripts print times.
std::string human_ns(uint64_t ns);

}  // namespace offwake::report
