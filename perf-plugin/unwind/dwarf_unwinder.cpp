#include "unwind/dwarf_unwinder.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <time.h>

#include <array>
#include <cstring>
#include <set>
#include <span>

#include "callchain/user_regs.h"

namespace offwake::unwind {

namespace {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Files are reported by path (dwfl_report_elf), so libdwfl never looks for one. Nor for
// separate debug files: .eh_frame is in the file itself, and .debug_frame is read when the file
// has it; looking further (/usr/lib/debug, or debuginfod over the network when DEBUGINFOD_URLS
// is set) would be slow in the middle of a recording.
int find_no_elf(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**) { return -1; }
int find_no_debuginfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word, char**) {
  return -1;
}
char* g_no_debuginfo_path = nullptr;
const Dwfl_Callbacks kDwflCallbacks = {
    .find_elf = find_no_elf,
    .find_debuginfo = find_no_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_no_debuginfo_path,
};

struct DwflEnd {
  void operator()(Dwfl* d) const { dwfl_end(d); }
};

enum class Outcome { kComplete, kCopyTooSmall, kMaxStack, kStopped };

}  // namespace

// One unwinding: the sample's registers and stack copy in, the pcs out.
struct Unwinding {
  std::array<Dwarf_Word, kDwarfRegs> regs{};
  std::span<const uint8_t> stack;  // the copy, from regs[kDwarfRegSp] up
  bool copy_full = false;          // the copy is as large as asked: the stack may go on beyond it
  uint32_t max_frames = 0;
  std::vector<uint64_t> pcs;
  bool cut = false;                // max_frames reached
  bool read_failed = false;        // a read of the stack (or elsewhere) failed
  bool read_beyond_copy = false;   // one above the copy, which may stop short of the stack's top
};

// Whether the file at a mapping's path is the one the recording names.
bool same_file(const RecordedMapping& m, MappedFiles& files) {
  if (!m.build_id.empty()) return files.get(m.path).build_id == m.build_id;
  struct stat st {};
  return m.ino && stat(m.path.c_str(), &st) == 0 && st.st_dev == m.dev && st.st_ino == m.ino;
}

// A process's Dwfl: its files reported as pcs need them, its thread state from the copy.
class ProcessDwfl {
 public:
  ProcessDwfl(uint32_t pid, uint64_t generation, RecordedMappings& mappings, MappedFiles& files,
              UserUnwindCounts& counts)
      : pid_(pid), generation_(generation), mappings_(mappings), files_(files), counts_(counts),
        dwfl_(dwfl_begin(&kDwflCallbacks)) {}

  bool valid() const { return dwfl_ != nullptr; }
  uint64_t generation() const { return generation_; }
  uint64_t last_use = 0;

  // Reports the file whose mapping holds `pc`, unless one is there: whether a module holds
  // `pc` now. The first one attaches the thread callbacks (libdwfl takes the architecture from
  // a module).
  bool report(uint64_t pc) {
    if (dwfl_addrmodule(dwfl_.get(), pc)) return attached_;
    const RecordedMapping* m = mappings_.find(pid_, pc);
    if (!m || failed_.count(m->path)) return false;
    std::string file = m->open_path.empty() ? m->path : m->open_path;
    const MappedFile* f = &files_.get(file);
    // Read through /proc while the process lived, and gone since (a short command, unwound after
    // its exit): the file at its own path, if it is the one recorded (by build id, else device
    // and inode). Without this, one such file's stacks (of the C library, say) were all a pc
    // alone, in 3 of 12 runs of a 0.1 s command with --call-graph dwarf.
    if (!f->error.empty() && file != m->path && same_file(*m, files_)) {
      file = m->path;
      f = &files_.get(file);
    }
    std::optional<uint64_t> bias = f->bias(*m);
    bool usable = f->error.empty() && bias && (m->build_id.empty() || m->build_id == f->build_id);
    Dwfl_Module* mod = nullptr;
    if (usable) mod = dwfl_report_elf(dwfl_.get(), m->path.c_str(), file.c_str(), -1, *bias, true);
    if (!mod || dwfl_addrmodule(dwfl_.get(), pc) != mod) {
      failed_.insert(m->path);
      ++counts_.files_unusable;
      return false;
    }
    if (!attached_) attached_ = dwfl_attach_state(dwfl_.get(), nullptr, static_cast<pid_t>(pid_), &kThreadCallbacks, this);
    return attached_;
  }

  Outcome unwind(uint32_t tid, Unwinding& u) {
    current_ = &u;
    const int rc = dwfl_getthread_frames(dwfl_.get(), static_cast<pid_t>(tid), on_frame, this);
    current_ = nullptr;
    if (u.cut) return Outcome::kMaxStack;
    if (u.read_beyond_copy) return Outcome::kCopyTooSmall;
    // libdwfl ends without an error at a frame whose return address is undefined: the
    // outermost one by its CFI (_start, clone3), or one whose return address could not be read.
    if (rc == 0 && !u.read_failed) return Outcome::kComplete;
    return !u.pcs.empty() && at_entry_point(u.pcs.back()) ? Outcome::kComplete : Outcome::kStopped;
  }

 private:
  static int on_frame(Dwfl_Frame* state, void* arg) {
    auto* self = static_cast<ProcessDwfl*>(arg);
    Unwinding& u = *self->current_;
    Dwarf_Addr pc = 0;
    bool activation = false;
    // The file of the pc first: whether the frame is an activation (a signal frame's caller)
    // depends on the unwind rules of the frame before it.
    if (!dwfl_frame_pc(state, &pc, nullptr)) return DWARF_CB_ABORT;
    self->report(pc);
    if (!dwfl_frame_pc(state, &pc, &activation)) return DWARF_CB_ABORT;
    u.pcs.push_back(activation ? pc : pc - 1);
    if (u.pcs.size() >= u.max_frames) {
      u.cut = true;
      return DWARF_CB_ABORT;
    }
    return DWARF_CB_OK;
  }

  // Whether `pc` (a frame's, one byte into its call) lies in the first bytes of its file's
  // entry point (ELF e_entry: _start), an outermost frame whatever its CFI says: the dynamic
  // loader's _start does not mark its return address undefined, and libdwfl then reads past
  // it and fails, after the whole stack.
  bool at_entry_point(uint64_t pc) const {
    constexpr uint64_t kEntryBytes = 64;  // _start's call is within them (ld.so's at +7, libc's at +0x25)
    Dwfl_Module* mod = dwfl_addrmodule(dwfl_.get(), pc);
    GElf_Addr bias = 0;
    Elf* elf = mod ? dwfl_module_getelf(mod, &bias) : nullptr;
    GElf_Ehdr ehdr;
    if (!elf || !gelf_getehdr(elf, &ehdr) || !ehdr.e_entry) return false;
    const uint64_t entry = ehdr.e_entry + bias;
    return pc >= entry && pc < entry + kEntryBytes;
  }

  // libdwfl's thread callbacks: one thread, whatever its tid, whose state is the copy's.
  static pid_t next_thread(Dwfl*, void*, void**) { return 0; }
  static bool get_thread(Dwfl*, pid_t, void* arg, void** thread_arg) {
    *thread_arg = arg;
    return true;
  }
  static bool set_initial_registers(Dwfl_Thread* thread, void* arg) {
    const Unwinding& u = *static_cast<ProcessDwfl*>(arg)->current_;
    return dwfl_thread_state_registers(thread, 0, kDwarfRegs, u.regs.data());
  }
  static bool memory_read(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
    return static_cast<ProcessDwfl*>(arg)->read(addr, result);
  }

  // A word of the stack copy or, elsewhere, of a read-only load segment of a reported file.
  bool read(uint64_t addr, Dwarf_Word* out) {
    Unwinding& u = *current_;
    const uint64_t sp = u.regs[kDwarfRegSp];
    if (addr >= sp && addr - sp <= u.stack.size() && u.stack.size() - (addr - sp) >= sizeof *out) {
      std::memcpy(out, u.stack.data() + (addr - sp), sizeof *out);
      return true;
    }
    if (read_file(addr, out)) return true;
    u.read_failed = true;
    if (addr >= sp && u.copy_full) u.read_beyond_copy = true;
    return false;
  }

  bool read_file(uint64_t addr, Dwarf_Word* out) {
    Dwfl_Module* mod = dwfl_addrmodule(dwfl_.get(), addr);
    Dwarf_Addr bias = 0;
    Elf* elf = mod ? dwfl_module_getelf(mod, &bias) : nullptr;
    size_t phnum = 0, size = 0;
    if (!elf || elf_getphdrnum(elf, &phnum) != 0) return false;
    const char* raw = elf_rawfile(elf, &size);
    const uint64_t vaddr = addr - bias;
    for (size_t i = 0; raw && i < phnum; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD || (ph.p_flags & PF_W)) continue;
      if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr + sizeof *out > ph.p_filesz) continue;
      const uint64_t offset = ph.p_offset + (vaddr - ph.p_vaddr);
      if (offset + sizeof *out > size) return false;
      std::memcpy(out, raw + offset, sizeof *out);
      return true;
    }
    return false;
  }

  static constexpr Dwfl_Thread_Callbacks kThreadCallbacks = {
      .next_thread = next_thread,
      .get_thread = get_thread,
      .memory_read = memory_read,
      .set_initial_registers = set_initial_registers,
      .detach = nullptr,
      .thread_detach = nullptr,
  };

  uint32_t pid_;
  uint64_t generation_;
  RecordedMappings& mappings_;
  MappedFiles& files_;
  UserUnwindCounts& counts_;
  std::unique_ptr<Dwfl, DwflEnd> dwfl_;
  bool attached_ = false;
  std::set<std::string> failed_;  // files of this process that could not be reported
  Unwinding* current_ = nullptr;
};

DwarfUnwinder::DwarfUnwinder(DwarfUnwinderOptions o) : opt_(o), mappings_(o.read_proc) {
  if (opt_.max_frames == 0) opt_.max_frames = 1;
  if (opt_.max_processes == 0) opt_.max_processes = 1;
}
DwarfUnwinder::~DwarfUnwinder() = default;

void DwarfUnwinder::exit(uint32_t pid, uint32_t tid) {
  if (pid == tid) processes_.erase(pid);
}

ProcessDwfl* DwarfUnwinder::process(uint32_t pid) {
  const uint64_t generation = mappings_.generation(pid);
  auto it = processes_.find(pid);
  if (it != processes_.end() && it->second->generation() != generation) {
    processes_.erase(it);  // a mapping it reported may be gone
    it = processes_.end();
  }
  if (it == processes_.end()) {
    if (processes_.size() >= opt_.max_processes) {
      auto oldest = processes_.begin();
      for (auto p = processes_.begin(); p != processes_.end(); ++p)
        if (p->second->last_use < oldest->second->last_use) oldest = p;
      processes_.erase(oldest);
    }
    auto p = std::make_unique<ProcessDwfl>(pid, generation, mappings_, files_, counts_);
    if (!p->valid()) return nullptr;
    it = processes_.emplace(pid, std::move(p)).first;
  }
  it->second->last_use = ++clock_;
  return it->second.get();
}

std::vector<uint64_t> DwarfUnwinder::unwind_pcs(uint32_t pid, uint32_t tid, const UserStackDump& dump) {
  Unwinding u;
  for (unsigned n = 0; n < kDwarfRegs; ++n) {
    auto r = dump.reg(kDwarfToPerfReg[n]);
    if (!r) {
      ++counts_.no_registers;
      return {};
    }
    u.regs[n] = *r;
  }
  const uint64_t pc = u.regs[kDwarfRegPc];
  u.stack = dump.stack;
  if (u.stack.empty()) {
    ++counts_.empty_copy;
    return {pc};
  }
  u.copy_full = dump.stack_copy_full();
  u.max_frames = opt_.max_frames;
  ProcessDwfl* p = process(pid);
  if (!p || !p->report(pc)) {
    ++counts_.no_mapping;
    return {pc};
  }
  switch (p->unwind(tid, u)) {
    case Outcome::kComplete: ++counts_.complete; break;
    case Outcome::kCopyTooSmall: ++counts_.copy_too_small; break;
    case Outcome::kMaxStack: ++counts_.max_stack; break;
    case Outcome::kStopped: ++counts_.stopped; break;
  }
  if (u.pcs.empty()) u.pcs.push_back(pc);
  return std::move(u.pcs);
}

void DwarfUnwinder::unwind(uint32_t pid, uint32_t tid, const UserStackDump& dump, Callchain& chain) {
  if (!dump.regs_mask && !dump.stack_size) return;  // no copy was asked for
  const uint64_t start = now_ns();
  ++counts_.stacks;
  std::vector<uint64_t> pcs = unwind_pcs(pid, tid, dump);
  if (!pcs.empty()) chain.set_user_frames(pcs);
  counts_.frames += pcs.size();
  counts_.ns += now_ns() - start;
}

}  // namespace offwake::unwind
