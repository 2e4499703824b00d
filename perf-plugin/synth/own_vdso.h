// This process's own vDSO as a file: on the same kernel it is the vDSO of every (64-bit)
// process, which has no file of its own ("[vdso]" in its mappings). The symbolizer names
// frames by it, as perf does; the unwinder of stack copies reads its CFI.
#pragma once

#include <string>

namespace offwake {

// A private temporary file holding the vDSO image, section headers and all, written once and
// removed at exit; empty if it cannot be had.
const std::string& own_vdso_file();

inline constexpr const char* kVdsoName = "[vdso]";  // as the kernel names its mapping

}  // namespace offwake
