#include "synth/host_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "util/text.h"

namespace offwake {

// The first value of each "key : value" line of /proc/cpuinfo.
static std::map<std::string, std::string> cpuinfo() {
  std::map<std::string, std::string> kv;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    kv.emplace(trimmed(line.substr(0, colon)), trimmed(line.substr(colon + 1)));
  }
  return kv;
}

perfdata::HostInfo collect_host_info(std::vector<std::string> cmdline) {
  perfdata::HostInfo h;
  struct utsname u {};
  if (uname(&u) == 0) {
    h.hostname = u.nodename;
    h.os_release = u.release;
    h.arch = u.machine;
  }
  h.version = "perf-offwake " OFFWAKE_VERSION;
  auto cpu = cpuinfo();
  h.cpu_desc = cpu.count("model name") ? cpu["model name"] : h.arch;
  if (cpu.count("vendor_id")) {
    h.cpu_id = cpu["vendor_id"] + "," + cpu["cpu family"] + "," + cpu["model"] + "," + cpu["stepping"];
  }
  h.nr_cpus_available = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF));
  h.nr_cpus_online = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream mem("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  while (mem >> key >> kb) {
    if (key == "MemTotal:") {
      h.total_mem_kb = kb;
      break;
    }
    mem.ignore(256, '\n');
  }
  h.cmdline = std::move(cmdline);
  return h;
}

}  // namespace offwake
