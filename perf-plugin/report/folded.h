// Folded stacks, one line per stack with its weight, for flame graph tools. Off-wake lines are
// byte for byte what scripts/offwake-collapse.py prints (bcc offwaketime's format):
//   comm;blocked frames root->leaf;--;waker frames leaf->root;waker_comm NS
// and, with `wallclock`, what scripts/offwake-wallclock.py prints:
//   comm;frames root->leaf[;[off-cpu]] NS
#pragma once

#include <string>
#include <vector>

#include "report/profile.h"

namespace offwake::report {

enum class Unit { kNs, kUs };

struct FoldedOptions {
  Unit unit = Unit::kNs;
  bool wallclock = false;
  uint64_t min_ns = 0;  // lines below this (after summing) are dropped
};

// The lines, sorted by text (wallclock: by weight, largest first), each ending in '\n'.
std::vector<std::string> folded_lines(const Profile& profile, const FoldedOptions& options);

// A frame or thread name as folded stacks can hold it.
std::string folded_frame(const std::string& name);  // no ';' nor newline
std::string folded_comm(const std::string& comm);   // no ';' nor ' ', "[unknown]" if empty

// The names of the off-wake folded line of a stack, bottom first (comm, blocked frames root
// first, then "--", the waker's frames leaf first and the waker's name; without `with_waker`
// only the first two), as folded_lines joins them.
std::vector<std::string> offwake_path(const Stack& stack, bool with_waker = true);

inline constexpr const char* kUnknownWaker = "[unknown waker]";
inline constexpr const char* kSeparator = "--";

}  // namespace offwake::report
