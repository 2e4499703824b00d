// RAII for a libelf handle and the descriptor under it: the one place an ELF file is opened.
#pragma once

#include <memory>
#include <string>

#include "util/fd.h"
#include "util/result.h"

struct Elf;

namespace offwake {

class ElfHandle {
 public:
  // Opens `path` read-only and checks that it is an ELF file.
  static Result<ElfHandle> open(const std::string& path);
  Elf* get() const { return elf_.get(); }

 private:
  struct Closer {
    void operator()(Elf* e) const;
  };
  UniqueFd fd_;  // declared first: the Elf goes before the descriptor it reads
  std::unique_ptr<Elf, Closer> elf_;
};

}  // namespace offwake
