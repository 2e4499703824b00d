// How the commands write a file of their own (report's --svg and --pprof, script's -g
// skeleton): whole or not at all, and readable by its owner only, as perf.data is.
#pragma once

#include <cstddef>
#include <string>

#include "util/result.h"

namespace offwake {

// Writes `data` to `path` as a new 0600 file, through a temporary name that is removed unless
// the whole file made it to disk (perf.data's PendingFile and FdSink); an existing `path` is
// replaced.
Status write_file(const std::string& path, const void* data, size_t size);

}  // namespace offwake
