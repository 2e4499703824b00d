#include "symbolize/dso.h"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <vector>

#include "symbolize/elf_symbols.h"
#include "synth/build_id_dir.h"
#include "synth/kernel_maps.h"
#include "synth/own_vdso.h"

namespace offwake::symbolize {
namespace {

bool is_regular_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// The files perf tries for a DSO's symbols, in its order: the debuglink file, the build-id
// cache, the distributions' debug directories, the file itself (for "[vdso]": ours).
std::vector<std::string> candidates(const std::string& name, const perfdata::BuildId& id) {
  std::vector<std::string> out;
  if (!name.empty() && name[0] == '/' && is_regular_file(name)) {
    auto self = ElfSymbolFile::open(name);
    if (self && !self->debuglink().empty()) {
      const std::string& link = self->debuglink();
      const std::string dir = dir_of(name);
      for (const std::string& c : {link, dir + "/" + link, dir + "/.debug/" + link, "/usr/lib/debug" + dir + "/" + link}) {
        if (is_regular_file(c)) {
          out.push_back(c);
          break;
        }
      }
    }
  }
  if (!id.empty()) {
    // perf's build-id cache: the binary perf record (or ours) read through the process that
    // mapped it, found by build id when this host has no such file, or another one.
    if (std::string cached = build_id_cached_file(build_id_dir(), id); !cached.empty()) out.push_back(cached);
    out.push_back(build_id_link(build_id_dir(), id) + "/debug");
  }
  if (!name.empty() && name[0] == '/') {
    out.push_back("/usr/lib/debug" + name + ".debug");
    out.push_back("/usr/lib/debug" + name);
  }
  if (!id.empty()) {
    const std::string hex = id.hex();
    out.push_back("/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug");
  }
  if (!name.empty() && name[0] == '/') out.push_back(name);
  if (name == kVdsoName && !own_vdso_file().empty()) out.push_back(own_vdso_file());
  return out;
}

uint8_t kallsyms_binding(char type) {
  if (type == 'W') return STB_WEAK;
  return std::isupper(static_cast<unsigned char>(type)) ? STB_GLOBAL : STB_LOCAL;
}

// perf's kallsyms loader: code, weak, data and bss symbols, names with their "\t[module]".
bool load_kallsyms(const std::string& path, SymbolTable& table) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  bool any_address = false;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    if (sp == std::string::npos || sp + 3 > line.size()) continue;
    char type = line[sp + 1];
    char up = static_cast<char>(std::toupper(static_cast<unsigned char>(type)));
    if (up != 'T' && up != 'W' && up != 'D' && up != 'B') continue;
    std::string name = line.substr(sp + 3);
    if (name.empty() || name[0] == '$') continue;
    // BPF programs: they come and go as programs load, so /proc/kallsyms when a recording is
    // read names whatever runs then. perf names them only from PERF_RECORD_KSYMBOL records.
    if (name.size() > 6 && name.compare(name.size() - 6, 6, "\t[bpf]") == 0) continue;
    uint64_t addr = std::strtoull(line.c_str(), nullptr, 16);
    any_address |= addr != 0;
    table.add(std::move(name), addr, 0, kallsyms_binding(type));
  }
  if (!any_address) return false;  // kptr_restrict: all zeros
  table.finish(true);
  return true;
}

}  // namespace

Dso::Dso(std::string name, perfdata::BuildId build_id, DsoKind kind, std::string kallsyms)
    : name_(std::move(name)), build_id_(build_id), kind_(kind), kallsyms_(std::move(kallsyms)) {}

DsoState Dso::state() {
  if (state_ == DsoState::kUnloaded) load();
  return state_;
}

const Symbol* Dso::find(uint64_t addr) {
  if (state() != DsoState::kLoaded) return nullptr;
  auto [it, inserted] = cache_.try_emplace(addr, nullptr);
  if (inserted) it->second = table_.find(addr);
  return it->second;
}

const Symbol* Dso::find_unnamed(uint64_t addr) {
  if (kind_ != DsoKind::kElf || state() != DsoState::kLoaded) return nullptr;
  if (!unnamed_) {
    // Opened again, once: load_elf() keeps no file open, and holding every DSO's for the few
    // with unnamed code would cost a descriptor and a mapping each.
    unnamed_ = std::make_unique<SymbolTable>();
    if (auto f = ElfSymbolFile::open(runtime_path_))
      f->load_unnamed_functions(*unnamed_, name_.substr(name_.rfind('/') + 1));
  }
  return unnamed_->find(addr);
}

void Dso::load() {
  state_ = DsoState::kMissing;
  switch (kind_) {
    case DsoKind::kElf: load_elf(); break;
    case DsoKind::kKernel: load_kernel(); break;
    case DsoKind::kPerfMap: load_perf_map(); break;
    case DsoKind::kNoFile: state_ = DsoState::kLoaded; break;
  }
}

void Dso::load_elf() {
  // The first candidate with a .symtab gives the symbols; else the first with a .dynsym,
  // which is also the "runtime" file whose program headers place them. A candidate whose
  // build id differs from the recorded one is never used.
  std::vector<ElfSymbolFile> files;
  int symtab = -1, runtime = -1;
  bool mismatch = false;
  for (const std::string& path : candidates(name_, build_id_)) {
    if (symtab >= 0 && runtime >= 0) break;
    auto f = ElfSymbolFile::open(path);
    if (!f) continue;
    if (!build_id_.empty() && !(f->build_id() == build_id_)) {
      mismatch = true;
      continue;
    }
    const bool has_symtab = symtab < 0 && f->has_symtab(), is_runtime = runtime < 0 && f->has_dynsym();
    if (!has_symtab && !is_runtime) continue;
    if (has_symtab) symtab = static_cast<int>(files.size());
    if (is_runtime) runtime = static_cast<int>(files.size());
    files.push_back(std::move(f).value());
  }
  const int use = symtab >= 0 ? symtab : runtime;
  const ElfSymbolFile* syms = use >= 0 ? &files[static_cast<size_t>(use)] : nullptr;
  if (!syms) {
    state_ = mismatch ? DsoState::kBuildIdMismatch : DsoState::kMissing;
    return;
  }
  syms->load_symbols(table_, true, runtime >= 0 ? files[static_cast<size_t>(runtime)] : *syms);
  table_.finish(false);
  if (runtime >= 0) table_.add_final(files[static_cast<size_t>(runtime)].plt_symbols());
  source_ = syms->path();
  runtime_path_ = runtime >= 0 ? files[static_cast<size_t>(runtime)].path() : syms->path();
  state_ = DsoState::kLoaded;
}

void Dso::load_kernel() {
  // kallsyms only describes the running kernel: a recording of another kernel needs
  // the copy perf keeps in its build-id cache.
  std::string path = kallsyms_;
  if (!build_id_.empty() && !(build_id_ == kernel_build_id())) {
    path = build_id_dir() + "/[kernel.kallsyms]/" + build_id_.hex() + "/kallsyms";
    if (!is_regular_file(path)) {
      state_ = DsoState::kBuildIdMismatch;
      return;
    }
  }
  if (!load_kallsyms(path, table_)) return;
  source_ = path;
  state_ = DsoState::kLoaded;
}

void Dso::load_perf_map() {
  if (!is_regular_file(name_)) return;
  std::ifstream in(name_);
  if (!in) return;
  std::string line;
  while (std::getline(in, line)) {
    char* end = nullptr;
    uint64_t start = std::strtoull(line.c_str(), &end, 16);
    if (!end || *end != ' ') continue;
    char* name_at = nullptr;
    uint64_t size = std::strtoull(end + 1, &name_at, 16);
    if (!name_at || *name_at != ' ') continue;
    table_.add(name_at + 1, start, size, STB_GLOBAL);
  }
  table_.finish(false);
  source_ = name_;
  state_ = DsoState::kLoaded;
}

}  // namespace offwake::symbolize
