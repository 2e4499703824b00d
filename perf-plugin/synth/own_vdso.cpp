#include "synth/own_vdso.h"

#include <elf.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "util/fd.h"

namespace offwake {

// Saved as perf saves it. The build ids of a recording's [vdso] mappings tell whether it is
// theirs (the symbolizer checks them).
const std::string& own_vdso_file() {
  static const std::string path = [] {
    const auto* base = reinterpret_cast<const unsigned char*>(getauxval(AT_SYSINFO_EHDR));
    if (!base) return std::string();
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
    const auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + eh->e_phoff);
    // The image ends with its section headers, past the loaded segment: without them the
    // copy has no .dynsym to name a frame by.
    size_t size = eh->e_shoff + static_cast<size_t>(eh->e_shnum) * eh->e_shentsize;
    for (int i = 0; i < eh->e_phnum; ++i)
      if (ph[i].p_type == PT_LOAD) size = std::max<size_t>(size, ph[i].p_offset + ph[i].p_filesz);
    char tmpl[] = "/tmp/perf-offwake-vdso.so-XXXXXX";
    UniqueFd fd(mkstemp(tmpl));
    if (!fd.valid()) return std::string();
    const bool written = size > 0 && write(fd.get(), base, size) == static_cast<ssize_t>(size);
    if (!written || close(fd.release()) != 0) {
      unlink(tmpl);
      return std::string();
    }
    std::string p = tmpl;
    std::atexit([] { unlink(own_vdso_file().c_str()); });
    return p;
  }();
  return path;
}

}  // namespace offwake
