// perf offwake script -g python: a script to start from, as perf script -g python writes one,
// with the handlers our host calls (trace_begin, process_event, trace_end) and the keys of
// our param_dict (script/sample_dict.h), which runs as it is with perf offwake script -s.
#pragma once

#include <string>

namespace offwake::script {

// The file perf script -g python writes, in the current directory; ours writes the same name.
inline constexpr const char* kSkeletonFile = "perf-script.py";

// Whether `lang` names Python as perf's script_spec__lookup() takes it ("python", "py", any case).
bool is_python(const std::string& lang);

// The skeleton's text.
std::string python_skeleton();

}  // namespace offwake::script
