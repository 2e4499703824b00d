// Dso: one binary that samples land in (an ELF file, the kernel, a perf-PID.map), named as
// perf names it, with its symbols loaded on first use and lookups cached per address.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "perfdata/records.h"
#include "symbolize/symbol_table.h"

namespace offwake::symbolize {

enum class DsoKind : uint8_t {
  kElf,      // a file: its debug file, build-id cache copy or itself
  kKernel,   // "[kernel.kallsyms]": /proc/kallsyms, or the build-id cache's copy
  kPerfMap,  // "/tmp/perf-PID.map" of JIT code: "START SIZE name" lines
  kNoFile,   // "[heap]", "[stack]"...: a name, no symbols
};

enum class DsoState : uint8_t { kUnloaded, kLoaded, kMissing, kBuildIdMismatch };

class Dso {
 public:
  // `kallsyms`: for the kernel, the symbols of the running kernel (a file in /proc/kallsyms
  // format); a recording of another kernel reads the build-id cache's copy instead.
  Dso(std::string name, perfdata::BuildId build_id, DsoKind kind, std::string kallsyms = "/proc/kallsyms");

  const std::string& name() const { return name_; }
  const perfdata::BuildId& build_id() const { return build_id_; }
  DsoKind kind() const { return kind_; }
  // Loads the symbols on first use.
  DsoState state();
  // The symbol holding `addr` (in the DSO's address space), or nullptr; cached.
  const Symbol* find(uint64_t addr);
  const SymbolTable& table() { state(); return table_; }
  // For an ELF file, the function holding `addr` that no symbol names: its .eh_frame range,
  // named "[FILE+0xADDR]" (FILE the file's name without its directory), or nullptr. The
  // ranges are read on first use.
  const Symbol* find_unnamed(uint64_t addr);
  // Where the symbols came from, "" if nowhere.
  const std::string& source() const { return source_; }

 private:
  void load();
  void load_elf();
  void load_kernel();
  void load_perf_map();

  std::string name_;
  perfdata::BuildId build_id_;
  DsoKind kind_;
  std::string kallsyms_;
  DsoState state_ = DsoState::kUnloaded;
  std::string source_;
  SymbolTable table_;
  std::unordered_map<uint64_t, const Symbol*> cache_;
  std::string runtime_path_;  // the file whose program headers place the symbols
  std::unique_ptr<SymbolTable> unnamed_;  // find_unnamed(), once read
};

}  // namespace offwake::symbolize
