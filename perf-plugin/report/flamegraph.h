// Flame graphs as self-contained, interactive SVG: hover for time and share, click to zoom,
// Ctrl-F or the search box to highlight matches (and print their share), reset. Nothing is
// fetched at view time. The off-wake layout (Brendan Gregg's): the blocked thread's stack grows
// up from the bottom, root first, then a separator, then the waker's stack inverted (leaf
// first) with the waker's thread on top.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/profile.h"

namespace offwake::report {

// What a frame is, for its colour.
enum class FlameKind {
  kThread,       // the blocked (or sampled) thread's name, the bottom frame
  kKernel,       // a kernel frame of the blocked (or sampled) stack
  kUser,         // a user frame of it
  kSeparator,    // "--" between the blocked and the waker's stack
  kWakerKernel,  // a kernel frame of the waker's stack
  kWakerUser,    // a user frame of it
  kWakerThread,  // the waker's thread name, at the top
  kOnCpu,        // the "[on-cpu]" mark of an on-CPU stack (--wallclock)
  kOffCpu,       // the "[off-cpu]" mark of an off-CPU stack (--wallclock)
};

struct FlameFrame {
  std::string name;
  FlameKind kind = FlameKind::kUser;
  bool operator==(const FlameFrame&) const = default;
};

// One path from the bottom frame up, and its weight (nanoseconds).
struct FlameStack {
  std::vector<FlameFrame> frames;  // bottom first
  uint64_t value = 0;
};

struct FlameGraphOptions {
  std::string title = "Off-wake time flame graph";
  std::vector<std::string> subtitle;  // lines under the title: command line, host, totals
  std::string value_name = "off-CPU";  // what the values measure, for the tooltip
  double min_width_px = 0.1;           // frames narrower than this are not drawn
  int width_px = 1200;
};

// The SVG document. Stacks with equal frames may repeat: they are merged.
std::string render_flamegraph_svg(const std::vector<FlameStack>& stacks, const FlameGraphOptions& options);

// The flame stacks of a profile: off-CPU stacks with their waker above a separator (unless
// the profile was loaded with no_waker); with `wallclock`, on-CPU and off-CPU stacks of the
// same thread side by side, each ending in a mark frame, without wakers.
std::vector<FlameStack> flame_stacks(const Profile& profile, bool wallclock);

}  // namespace offwake::report
