// Lists of process and thread ids as perf's options take them: record's -p and -t, report's
// and script's --pid and --tid. One rule for all four.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace offwake {

// "12,34" -> {12, 34}: comma-separated decimal ids from 1 to PID_MAX_LIMIT, in the order
// given, a repeated id kept once. `what` names an item in errors ("pid", "thread id"):
// "'x' is not a pid", and "-p takes a list of pids, not ''" for an empty list (a
// "$(pgrep -d, server)" with no server running must not select everything). An empty item
// ("1,,2") is not an id.
Result<std::vector<uint32_t>> parse_id_list(const std::string& text, std::string_view option, std::string_view what);

}  // namespace offwake
