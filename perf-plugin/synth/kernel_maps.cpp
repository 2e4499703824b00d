#include "synth/kernel_maps.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "synth/elf_file.h"

namespace offwake {

Result<Kallsyms> Kallsyms::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::from_errno("opening " + path);
  Kallsyms k;
  std::string line;
  while (std::getline(in, line)) {
    // "ffffffff81000000 T _text [module]"
    size_t sp1 = line.find(' ');
    if (sp1 == std::string::npos || sp1 + 3 >= line.size()) continue;
    char type = line[sp1 + 1];
    if (type != 't' && type != 'T' && type != 'W' && type != 'w') continue;
    size_t name_end = line.find_first_of(" \t", sp1 + 3);
    KernelSymbol s;
    s.addr = std::stoull(line.substr(0, sp1), nullptr, 16);
    s.name = line.substr(sp1 + 3, name_end == std::string::npos ? std::string::npos : name_end - sp1 - 3);
    k.symbols_.push_back(std::move(s));
  }
  if (k.symbols_.empty()) return Error::unavailable(path + ": no text symbols");
  if (std::all_of(k.symbols_.begin(), k.symbols_.end(), [](auto& s) { return s.addr == 0; }))
    return Error::unavailable(path + ": addresses are hidden (kernel.kptr_restrict); run as root", EPERM);
  std::stable_sort(k.symbols_.begin(), k.symbols_.end(),
                   [](const KernelSymbol& a, const KernelSymbol& b) { return a.addr < b.addr; });
  return k;
}

std::optional<uint64_t> Kallsyms::address_of(const std::string& name) const {
  for (const auto& s : symbols_)
    if (s.name == name) return s.addr;
  return std::nullopt;
}

const KernelSymbol* Kallsyms::find(uint64_t addr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), addr,
                             [](uint64_t a, const KernelSymbol& s) { return a < s.addr; });
  if (it == symbols_.begin()) return nullptr;
  return &*std::prev(it);
}

perfdata::BuildId kernel_build_id() {
  std::ifstream in("/sys/kernel/notes", std::ios::binary);
  std::vector<uint8_t> notes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_build_id_note(notes.data(), notes.size());
}

Result<perfdata::Mmap2Record> kernel_mmap(const Kallsyms& kallsyms) {
  auto text = kallsyms.address_of("_text");
  if (!text) text = kallsyms.address_of("_stext");
  if (!text) return Error::unavailable("kallsyms has no _text symbol");
  perfdata::Mmap2Record m;
  m.cpumode = PERF_RECORD_MISC_KERNEL;
  m.pid = static_cast<uint32_t>(-1);
  m.tid = 0;
  m.start = *text;
  m.len = ~uint64_t{0} - *text;
  m.pgoff = *text;  // perf relocates kernel symbols by the address of the named symbol
  m.prot = 5;       // PROT_READ | PROT_EXEC
  // No build id here: perf names the kernel dso "[kernel.kallsyms]", and its build id goes in
  // HEADER_BUILD_ID under that name (kernel_build_id_entry()).
  m.filename = "[kernel.kallsyms]_text";
  return m;
}

perfdata::BuildIdEntry kernel_build_id_entry() {
  return perfdata::BuildIdEntry{-1, PERF_RECORD_MISC_KERNEL, kernel_build_id(), "[kernel.kallsyms]"};
}

}  // namespace offwake
