// Test workloads for the BPF tests: run one held until the BPF filter is in place, and find
// its functions in its symbol table (its "truth" line is support/truth.h's).
#pragma once

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bpf/stack_trace_map.h"
#include "support/paths.h"
#include "support/truth.h"
#include "util/fd.h"

namespace offwake::bpf {

using test::kWorkloads;
using test::parse_truth;
using test::Truth;

// ---- a workload forked and held until the BPF filter is in place ----

class HeldProcess {
 public:
  // Forks; the child waits for release() before it execs `path` with `args`.
  HeldProcess(const std::string& path, const std::vector<std::string>& args) {
    int go[2], out[2];
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      char c;
      if (read(go[0], &c, 1) != 1) _exit(126);
      std::vector<char*> argv{const_cast<char*>(path.c_str())};
      for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(path.c_str(), argv.data());
      _exit(127);
    }
    close(go[0]);
    close(out[1]);
    go_.reset(go[1]);
    out_.reset(out[0]);
  }
  ~HeldProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // Whether it has not exited yet (it stays unreaped: finish() still collects it).
  bool running() const {
    siginfo_t info{};
    if (pid_ <= 0 || reaped_) return false;
    if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
    return info.si_pid == 0;
  }
  void release() {
    char c = 'g';
    ASSERT_EQ(write(go_.get(), &c, 1), 1);
    go_.reset();
  }
  // Waits for the exit; returns stdout.
  std::string finish(int* status) {
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = read(out_.get(), buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
    waitpid(pid_, status, 0);
    reaped_ = true;
    return text;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  UniqueFd go_, out_;
};

// ---- where a function lives: the workloads are non-PIE, so ELF addresses are runtime ones ----

struct Range {
  uint64_t start = 0, end = 0;
  bool contains(uint64_t ip) const { return ip >= start && ip < end; }
};

inline std::optional<Range> function_range(const std::string& elf_path, const std::string& name) {
  elf_version(EV_CURRENT);
  UniqueFd fd(open(elf_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  Elf* elf = elf_begin(fd.get(), ELF_C_READ, nullptr);
  if (!elf) return std::nullopt;
  std::optional<Range> found;
  Elf_Scn* scn = nullptr;
  while (!found && (scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    size_t n = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
    for (size_t i = 0; data && i < n; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC) continue;
      const char* s = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (s && name == s) {
        found = Range{sym.st_value, sym.st_value + sym.st_size};
        break;
      }
    }
  }
  elf_end(elf);
  return found;
}

inline bool stack_hits(const std::vector<uint64_t>& frames, const Range& r) {
  for (uint64_t ip : frames)
    if (r.contains(ip)) return true;
  return false;
}

inline std::vector<uint64_t> frames_of(const StackTraceMap& map, int64_t id) {
  if (id < 0) return {};
  auto f = map.lookup(static_cast<uint64_t>(id));
  return f.ok() ? std::vector<uint64_t>(f->begin(), f->end()) : std::vector<uint64_t>{};
}

}  // namespace offwake::bpf
