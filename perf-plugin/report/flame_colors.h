// What a flame graph frame looks like by kind: the blocked (or sampled) thread's stack in warm
// colours, the waker's in cool ones, kernel and user frames in different hues of each, the
// thread names in muted tones, the separator grey. Within a kind, the shade follows a hash of
// the name, so neighbours differ and a function has one colour in every graph.
#pragma once

#include <string>
#include <string_view>

#include "report/flamegraph.h"

namespace offwake::report {

// "#rrggbb" of a frame.
std::string frame_color(FlameKind kind, std::string_view name);
// The kind's colour in the legend (the middle of its range).
std::string legend_color(FlameKind kind);
// What the legend says of the kind ("kernel", "waker user", ...).
const char* legend_label(FlameKind kind);
// The data-kind attribute value ("kernel", "waker-user", ...), stable for tests and scripts.
const char* kind_name(FlameKind kind);

inline constexpr FlameKind kAllFlameKinds[] = {
    FlameKind::kThread,     FlameKind::kUser,        FlameKind::kKernel,
    FlameKind::kSeparator,  FlameKind::kWakerKernel, FlameKind::kWakerUser,
    FlameKind::kWakerThread, FlameKind::kOnCpu,      FlameKind::kOffCpu,
};

}  // namespace offwake::report
