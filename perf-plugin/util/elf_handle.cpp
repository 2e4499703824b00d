#include "util/elf_handle.h"

#include <fcntl.h>
#include <libelf.h>
#include <sys/stat.h>

namespace offwake {

void ElfHandle::Closer::operator()(Elf* e) const { elf_end(e); }

Result<ElfHandle> ElfHandle::open(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return Error("libelf: version mismatch");
  ElfHandle h;
  // Non-blocking, then regular files only: the paths come from recordings and /proc, and
  // opening a FIFO found there would wait for a writer forever.
  h.fd_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!h.fd_.valid()) return Error::from_errno("opening " + path);
  struct stat st {};
  if (fstat(h.fd_.get(), &st) != 0) return Error::from_errno("reading the status of " + path);
  if (!S_ISREG(st.st_mode)) return Error::bad_input(path + ": not a regular file");
  h.elf_.reset(elf_begin(h.fd_.get(), ELF_C_READ_MMAP, nullptr));
  if (!h.elf_ || elf_kind(h.elf_.get()) != ELF_K_ELF) return Error::bad_input(path + ": not an ELF file");
  return h;
}

}  // namespace offwake
