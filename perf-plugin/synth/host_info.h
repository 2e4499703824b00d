// What the machine is, for the feature sections of perf.data.
#pragma once

#include <string>
#include <vector>

#include "perfdata/features.h"

namespace offwake {

// uname, /proc/cpuinfo, /proc/meminfo and CPU counts; `cmdline` is the recording's argv.
perfdata::HostInfo collect_host_info(std::vector<std::string> cmdline);

}  // namespace offwake
