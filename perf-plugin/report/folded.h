// Folded stacks, one line per stack with its weight, for flame graph tools. Off-wake lines are
// byte for byte what scripts/offwake-collapse.py prints (bcc offwaketime's format):
//   comm;blocked frames root->leaf;--;waker frames leaf->root;waker_comm NS
// and with a wakeup chain (perf offwake record --chain-depth), per further hop its blocked
// frames root->leaf and its waker's frames leaf->root, every two stacks apart by "--", the
// last waker's comm at the end:
//   comm;blocked;--;hop 1 waker;--;hop 2 blocked;--;hop 2 waker;...;last_waker_comm NS
// and, with `wallclock`, what scripts/offwake-wallclock.py prints:
//   comm;frames root->leaf[;[off-cpu]] NS
#pragma once

#include <functional>
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
// UTF-8 (bytes that are not: U+FFFD, as our script host hands them to Python).
std::string folded_frame(const std::string& name);  // no ';' nor newline
std::string folded_comm(const std::string& comm);   // no ';', ' ' nor control character ('_'),
                                                    // "[unknown]" if empty

// What a name of an off-wake path is.
enum class PathPart {
  kThread,       // the blocked thread's comm, at the bottom
  kBlocked,      // a frame of a blocked stack (the bottom one, or a hop's): root first
  kSeparator,    // "--" between two stacks
  kWaker,        // a frame of a waker's stack (hop 1's, or a further hop's): leaf first
  kNotTaken,     // kStacksNotTaken, where the stacks of a waker named without them would be
  kWakerThread,  // the last waker's comm (or kUnknownWaker), at the top
};

// Calls `part` with each name of the off-wake path of a stack, bottom first: the comm, the
// blocked frames root first, then "--" and the waker's frames leaf first (kStacksNotTaken
// for a waker named without them); per further hop of
// the chain "--", its blocked frames root first, "--", its waker's frames leaf first; at the
// end the last waker's comm. Without `with_waker` only the comm and the blocked frames.
// `frame` is the frame of kBlocked and kWaker names, null for the others.
void walk_offwake_path(const Stack& stack, bool with_waker,
                       const std::function<void(std::string name, PathPart part, const Frame* frame)>& part);

// The names of the off-wake folded line of a stack (walk_offwake_path's), as folded_lines
// joins them.
std::vector<std::string> offwake_path(const Stack& stack, bool with_waker = true);

inline constexpr const char* kUnknownWaker = "[unknown waker]";
// A waker named without its stacks (Stack::waker_stacks_not_taken, Hop's: woken before the
// block reached --min-block or its sampling threshold) has this in their place.
inline constexpr const char* kStacksNotTaken = "[stacks not taken: woken early]";
inline constexpr const char* kSeparator = "--";

}  // namespace offwake::report
