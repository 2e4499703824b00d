// Scripts written for perf find perf's Python helpers (Core.py, Util.py, ...) through the
// environment, as perf's own scripts and the skeleton of `perf script -g python` do:
//   sys.path.append(os.environ['PERF_EXEC_PATH'] + '/scripts/python/Perf-Trace-Util/lib/Perf/Trace')
// perf script gives them its exec path there; perf offwake script gives them the same
// directory when it can find it, so that such a script runs unchanged (the
// perf_trace_context module it imports next is ours, the helpers perf's).
#pragma once

#include <optional>
#include <string>

namespace offwake::script {

// A directory with scripts/python/Perf-Trace-Util: the folder of this executable if it has one
// (perf-offwake installed in perf's exec path), else the exec path of the perf on PATH
// (`perf --exec-path`) if that has one; none otherwise.
std::optional<std::string> find_perf_exec_path();

// Sets PERF_EXEC_PATH to find_perf_exec_path() when the environment does not set it already
// (a user's PERF_EXEC_PATH, or perf's own when it runs us with --exec-path, is kept).
void provide_perf_exec_path();

}  // namespace offwake::script
