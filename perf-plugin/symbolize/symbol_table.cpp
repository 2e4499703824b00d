#include "symbolize/symbol_table.h"

#include <elf.h>
// libiberty declares its own basename() unless told that the C library has one.
#define HAVE_DECL_BASENAME 1
#include <libiberty/demangle.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace offwake::symbolize {
namespace {

size_t leading_underscores(const std::string& s) {
  size_t n = 0;
  while (n < s.size() && s[n] == '_') ++n;
  return n;
}

// Of two symbols at one address, whether perf keeps `a` over `b`: one with a size, then a
// non-weak one, then a global one, then fewer leading underscores, then the longer name; on a
// tie the first one.
bool keep_first(const Symbol& a, const Symbol& b) {
  bool a_sized = a.end > a.start, b_sized = b.end > b.start;
  if (a_sized != b_sized) return a_sized;
  bool a_weak = a.binding == STB_WEAK, b_weak = b.binding == STB_WEAK;
  if (a_weak != b_weak) return b_weak;
  bool a_global = a.binding == STB_GLOBAL, b_global = b.binding == STB_GLOBAL;
  if (a_global != b_global) return a_global;
  size_t ua = leading_underscores(a.name), ub = leading_underscores(b.name);
  if (ua != ub) return ua < ub;
  if (a.name.size() != b.name.size()) return a.name.size() > b.name.size();
  return true;
}

bool is_module_symbol(const Symbol& s) { return s.name.find('[') != std::string::npos; }

uint64_t next_page(uint64_t addr) { return (addr + 4095) / 4096 * 4096 + 4096; }

}  // namespace

void SymbolTable::add(std::string name, uint64_t start, uint64_t size, uint8_t binding) {
  symbols_.push_back(Symbol{std::move(name), start, start + size, binding});
}

void SymbolTable::finish(bool kallsyms) {
  std::stable_sort(symbols_.begin(), symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
  // Ends first, then duplicates: perf's order, which makes the last of several size-less
  // symbols at one address the only one with a size, hence the one kept.
  for (size_t i = 0; i + 1 < symbols_.size(); ++i) {
    Symbol& s = symbols_[i];
    if (s.end != s.start) continue;
    const Symbol& next = symbols_[i + 1];
    if (kallsyms && is_module_symbol(s) != is_module_symbol(next))
      s.end = next_page(s.start);
    else
      s.end = next.start;
  }
  if (!symbols_.empty() && symbols_.back().end == symbols_.back().start)
    symbols_.back().end = next_page(symbols_.back().start);

  std::vector<Symbol> kept;
  kept.reserve(symbols_.size());
  for (Symbol& s : symbols_) {
    if (!kept.empty() && kept.back().start == s.start) {
      if (!keep_first(kept.back(), s)) kept.back() = std::move(s);
      continue;
    }
    kept.push_back(std::move(s));
  }
  symbols_ = std::move(kept);
  if (kallsyms) {
    for (Symbol& s : symbols_) {
      size_t tab = s.name.find('\t');
      if (tab != std::string::npos) s.name.resize(tab);
    }
  }
}

void SymbolTable::add_final(std::vector<Symbol> symbols) {
  if (symbols.empty()) return;
  for (Symbol& s : symbols) symbols_.push_back(std::move(s));
  std::stable_sort(symbols_.begin(), symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
}

const Symbol* SymbolTable::find(uint64_t addr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), addr,
                             [](uint64_t a, const Symbol& s) { return a < s.start; });
  if (it == symbols_.begin()) return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

// libiberty's cplus_demangle with no options, the demangler Debian's perf uses: names come
// out without parameters, special names (thunks, vtables) as it decides; a name it cannot
// demangle stays mangled, as in perf.
std::string demangle(const std::string& name) {
  if (name.size() < 3 || name.compare(0, 2, "_Z") != 0) return name;
  std::unique_ptr<char, decltype(&std::free)> out(cplus_demangle(name.c_str(), DMGL_NO_OPTS), &std::free);
  return out ? std::string(out.get()) : name;
}

}  // namespace offwake::symbolize
