// ElfSymbolFile: one candidate file for a DSO's symbols (the binary itself, its debug file or
// a build-id cache copy), read with libelf. perf's rules for which symbols count: functions,
// objects and text labels that are defined, placed in the DSO's file-offset address space
// through the PT_LOAD program header that holds them.
#pragma once

#include <memory>
#include <string>

#include "perfdata/records.h"
#include "symbolize/symbol_table.h"
#include "util/elf_handle.h"
#include "util/result.h"

struct Elf;

namespace offwake::symbolize {

class ElfSymbolFile {
 public:
  static Result<ElfSymbolFile> open(const std::string& path);

  const std::string& path() const { return path_; }
  const perfdata::BuildId& build_id() const { return build_id_; }
  bool has_symtab() const { return has_symtab_; }
  bool has_dynsym() const { return has_dynsym_; }
  // The file named by .gnu_debuglink, or "".
  const std::string& debuglink() const { return debuglink_; }

  // Adds .symtab (or .dynsym without one) to `table`; `demangle_names` for user code.
  // `layout` gives the program headers: the binary itself, since a debug file's headers
  // keep the addresses but not the file offsets.
  void load_symbols(SymbolTable& table, bool demangle_names, const ElfSymbolFile& layout) const;
  // perf's "name@plt" symbols, one per .rela.plt entry in .plt (or .plt.sec), in the
  // file-offset space; for the runtime file, after the others are finished.
  std::vector<Symbol> plt_symbols() const;
  // The functions of the file's .eh_frame (or .debug_frame), for code no symbol names: each
  // is named "[LABEL+0xADDR]" by the address it starts at in the file (what addr2line and gdb
  // take), and placed in the file-offset space as symbols are.
  void load_unnamed_functions(SymbolTable& table, const std::string& label) const;

 private:
  Status scan();
  Elf* elf() const { return handle_.get(); }

  std::string path_;
  ElfHandle handle_;
  perfdata::BuildId build_id_;
  bool has_symtab_ = false, has_dynsym_ = false;
  std::string debuglink_;
};

}  // namespace offwake::symbolize
