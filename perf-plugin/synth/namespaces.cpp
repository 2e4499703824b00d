#include "synth/namespaces.h"

#include <sys/stat.h>

#include <string>

namespace offwake {

std::optional<perfdata::NamespacesRecord> read_namespaces(pid_t pid, pid_t tid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/ns/";
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0) return std::nullopt;
  perfdata::NamespacesRecord r;
  r.pid = static_cast<uint32_t>(pid);
  r.tid = static_cast<uint32_t>(tid);
  r.sample_id.pid = r.pid;
  r.sample_id.tid = r.tid;
  for (const char* name : kNamespaceNames) {
    perfdata::NamespaceLink l;
    // stat() follows the ns link to the nsfs inode: the device and inode the kernel reports.
    if (stat((dir + name).c_str(), &st) == 0) l = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
    r.namespaces.push_back(l);
  }
  return r;
}

}  // namespace offwake
