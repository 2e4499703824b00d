// The running kernel as perf sees it: its build id, its text mapping and its symbols.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "perfdata/features.h"
#include "perfdata/records.h"

namespace offwake {

struct KernelSymbol {
  uint64_t addr = 0;
  std::string name;
};

// /proc/kallsyms, text symbols only, sorted by address.
class Kallsyms {
 public:
  static Result<Kallsyms> load(const std::string& path = "/proc/kallsyms");
  std::optional<uint64_t> address_of(const std::string& name) const;
  // The symbol containing addr (the nearest one at or below it).
  const KernelSymbol* find(uint64_t addr) const;
  size_t size() const { return symbols_.size(); }

 private:
  std::vector<KernelSymbol> symbols_;
};

// The build id of the running kernel, from /sys/kernel/notes.
perfdata::BuildId kernel_build_id();

// The "[kernel.kallsyms]_text" MMAP2 perf uses to place kernel addresses, and the matching
// HEADER_BUILD_ID entry.
Result<perfdata::Mmap2Record> kernel_mmap(const Kallsyms& kallsyms);
perfdata::BuildIdEntry kernel_build_id_entry();

}  // namespace offwake
