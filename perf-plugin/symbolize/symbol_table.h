// SymbolTable: the symbols of one DSO as perf keeps them, in a sorted vector searched by
// binary search. finish() applies perf's rules: a symbol without a size ends where the next
// one starts, and of several symbols at one address only the best one is kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbolize/symbolizer.h"

namespace offwake::symbolize {

class SymbolTable {
 public:
  // `size` 0: the end is fixed up by finish().
  void add(std::string name, uint64_t start, uint64_t size, uint8_t binding);
  // `kallsyms`: a size-less symbol before a switch between kernel and module symbols ends at
  // the next page instead of spanning the gap. Module symbols are named "sym\t[module]" until
  // then; the module part is dropped here.
  void finish(bool kallsyms);

  // Symbols added after finish() with their ends as they are (perf's PLT entries).
  void add_final(std::vector<Symbol> symbols);

  // The symbol with start <= addr < end, or nullptr.
  const Symbol* find(uint64_t addr) const;
  size_t size() const { return symbols_.size(); }
  bool empty() const { return symbols_.empty(); }
  const std::vector<Symbol>& symbols() const { return symbols_; }

 private:
  std::vector<Symbol> symbols_;
};

// Demangles a C++ name the way perf shows it by default: no parameter list, no return type
// ("ns::Box<long>::spin" for _ZN2ns3BoxIlE4spinEl), no " [clone .cold]". Names that are not mangled come back as is.
std::string demangle(const std::string& name);

}  // namespace offwake::symbolize
