// Turns the addresses of a perf.data's samples into symbols, the way perf does: the threads
// and mappings the file describes (COMM, MMAP2, FORK, EXIT records, fed in file order), the
// kernel from /proc/kallsyms, user code from the ELF files the MMAP2 records name (.symtab,
// then .dynsym), checked against the build ids the file recorded. A file that is gone or whose
// build id differs gives "[unknown]", never a wrong name. Lookups are cached per DSO.
//
// What perf 6.1 does and this follows (checked against `perf script -s` in the tests):
//  - a user ip maps into the DSO as ip - map start + pgoff (a file offset); symbols are moved
//    into that space through their PT_LOAD program header, so sym start/end are file offsets
//    (0x11e6 for a non-PIE function at 0x4011e6);
//  - symbols come from the first of: the .gnu_debuglink file, $HOME/.debug/.build-id,
//    /usr/lib/debug (by path and by build id), the file itself, that has a .symtab, else the
//    first with a .dynsym; C++ names are demangled without parameters ("ns::Box<long>::spin");
//  - a symbol without a size ends where the next one starts; of several at one address one
//    is kept (sized, non-weak, global, fewer leading '_', longer name);
//  - mmaps overlay older ones (exec does not drop a process's maps; the new ones replace what
//    they overlap); FORK to a new pid copies the parent's maps and comm; EXIT changes nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "callchain/callchain.h"
#include "perfdata/features.h"
#include "perfdata/records.h"

namespace offwake::symbolize {

struct Symbol {
  std::string name;
  uint64_t start = 0, end = 0;  // in the DSO's address space, as perf reports sym start/end
  uint8_t binding = 0;          // STB_LOCAL, STB_GLOBAL, STB_WEAK (perf's sym "binding")
};

struct ResolvedFrame {
  uint64_t ip = 0;
  const Symbol* sym = nullptr;  // nullptr: unknown; owned by the Symbolizer
  std::string dso;              // "[kernel.kallsyms]", "/usr/lib/.../libc.so.6", "[unknown]"
  uint64_t symoff = 0;          // ip - sym start, in the DSO's address space
  uint64_t dso_addr = 0;        // ip mapped into the DSO's address space
  // A mapping holds ip (dso is its name). perf's Python frame has a "dso" key only then, and
  // a "sym" key only when sym is set.
  bool mapped = false;
  // That mapping, as the recording's MMAP2 record gives it, and its DSO's build id (owned by
  // the Symbolizer; empty if none is known): perf script's dso_map_start, dso_map_end, dso_bid.
  uint64_t map_start = 0, map_end = 0;
  const perfdata::BuildId* build_id = nullptr;
  // The function holding the code, as the report names it; nullptr: unknown. It is sym
  // where perf names one; where perf says "[unknown]" (no sym) it fills the gap, in an ELF
  // file: a caller's frame is looked up a byte before its return address, at its call, which
  // may be the last instruction of its function (a call that does not return: exit, abort);
  // code no symbol names is named by its .eh_frame function, "[FILE+0xADDR]"
  // (Dso::find_unnamed). Left to sym alone with SymbolizerOptions::name_unnamed off.
  const Symbol* function = nullptr;
};

struct SymbolizerOptions {
  // The running kernel's symbols. The fuzz target gives a small file of its own: reading the
  // real one for every input would leave no time to fuzz.
  std::string kallsyms = "/proc/kallsyms";
  // Whether ResolvedFrame::function fills the gaps perf leaves (reading the .eh_frame of each
  // file with code no symbol names). The report does; `perf offwake script`, whose frames are
  // perf's, does not.
  bool name_unnamed = true;
};

class Symbolizer {
 public:
  Symbolizer();
  explicit Symbolizer(SymbolizerOptions options);
  ~Symbolizer();
  Symbolizer(Symbolizer&&) noexcept;
  Symbolizer& operator=(Symbolizer&&) noexcept;

  // Build ids the file's header recorded (HEADER_BUILD_ID), to check ELF files against.
  // Call before observe(): they apply to the MMAP2 records seen afterwards.
  void add_build_ids(const std::vector<perfdata::BuildIdEntry>& entries);
  // Feed every non-sample record in file order; samples between them resolve against the
  // state at that point (new mmaps replace what they overlap, FORK copies a process's maps).
  // Samples are ignored.
  void observe(const perfdata::Record& record);

  // The comm of a thread as the file says, "[unknown]" if it never did.
  const std::string& comm(uint32_t tid) const;
  // Whether the file named the thread; perf shows ":TID" for one it did not.
  bool has_comm(uint32_t tid) const;
  // The thread's name as perf shows it: its comm, or ":TID".
  std::string thread_name(uint32_t tid) const;
  ResolvedFrame resolve(uint32_t pid, uint64_t ip, FrameContext context);
  std::vector<ResolvedFrame> resolve(uint32_t pid, const Callchain& chain);
  // The batched form: the frames of a chain, resolved once per distinct chain of a process
  // and kept until that process's maps change. The reference stays valid until the next
  // observe() of a record that changes the maps.
  const std::vector<ResolvedFrame>& resolve_cached(uint32_t pid, const Callchain& chain);

  // Counters for honesty: frames that could not be named, and why.
  struct Stats {
    uint64_t frames = 0, unknown_map = 0, unknown_symbol = 0, build_id_mismatch = 0, missing_file = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Stats stats_;
};

}  // namespace offwake::symbolize
