// ProcessMaps: the address space of one process as its MMAP2 records built it. A new mapping
// replaces whatever it overlaps, cutting older mappings down to the parts it leaves, as perf's
// maps do.
#pragma once

#include <cstdint>
#include <map>

#include "symbolize/dso.h"

namespace offwake::symbolize {

struct Mapping {
  uint64_t start = 0, end = 0, pgoff = 0;
  Dso* dso = nullptr;
  bool identity = false;  // anonymous or pseudo mappings: the DSO address is the ip
  uint64_t dso_addr(uint64_t ip) const { return identity ? ip : ip - start + pgoff; }
};

class ProcessMaps {
 public:
  void insert(const Mapping& m);
  const Mapping* find(uint64_t ip) const;
  size_t size() const { return maps_.size(); }

 private:
  std::map<uint64_t, Mapping> maps_;  // by start
};

}  // namespace offwake::symbolize
