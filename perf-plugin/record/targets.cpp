#include "record/targets.h"

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace offwake {
namespace {

// The state letter of /proc/<pid>/task/<tid>/stat (R, S, D, Z, X, ...); nullopt if there is
// no such thread. The state follows the command name in parentheses, which may itself hold
// ") ": it is read after the last ')'.
std::optional<char> thread_state(uint32_t pid, uint32_t tid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat";
  std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(path.c_str(), "re"), fclose);
  if (!f) return std::nullopt;
  char line[1024];
  const size_t n = fread(line, 1, sizeof line - 1, f.get());
  line[n] = '\0';
  const char* paren = strrchr(line, ')');
  if (!paren || paren[1] != ' ' || !paren[2]) return std::nullopt;
  return paren[2];
}

// Z: exited, not reaped yet; X: being reaped.
bool dead(std::optional<char> state) { return !state || *state == 'Z' || *state == 'X'; }

}  // namespace

std::optional<uint32_t> tgid_of(uint32_t tid) {
  const std::string status = "/proc/" + std::to_string(tid) + "/status";
  std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(status.c_str(), "re"), fclose);
  if (!f) return std::nullopt;
  char line[256];
  long tgid = -1;
  while (fgets(line, sizeof line, f.get()))
    if (sscanf(line, "Tgid: %ld", &tgid) == 1) break;
  return tgid > 0 ? static_cast<uint32_t>(tgid) : tid;
}

bool thread_exited(uint32_t tid) {
  auto tgid = tgid_of(tid);
  return !tgid || dead(thread_state(*tgid, tid));
}

bool process_exited(uint32_t pid) {
  // The usual answer from one file: a live main thread. The recording asks every few ms.
  if (!dead(thread_state(pid, pid))) return false;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return true;
  while (dirent* e = readdir(d.get())) {
    char* end = nullptr;
    const unsigned long tid = strtoul(e->d_name, &end, 10);
    if (*end || tid == 0 || tid == pid) continue;
    if (!dead(thread_state(pid, static_cast<uint32_t>(tid)))) return false;
  }
  return true;
}

// -p names processes: a thread id that is not its process's id would match no block.
Status check_process(uint32_t pid) {
  auto tgid = tgid_of(pid);
  if (tgid && *tgid != pid)
    return Error::usage(std::to_string(pid) + " is a thread of process " + std::to_string(*tgid) + ": use -p " +
                        std::to_string(*tgid) + " for the process, or -t " + std::to_string(pid) + " for the thread");
  // A zombie would never block, and would keep the recording going until its parent reaps it.
  if (!tgid || process_exited(pid)) return Error::usage("process " + std::to_string(pid) + " does not exist");
  return ok_status();
}

Status check_thread(uint32_t tid) {
  if (thread_exited(tid)) return Error::usage("thread " + std::to_string(tid) + " does not exist");
  return ok_status();
}

}  // namespace offwake
