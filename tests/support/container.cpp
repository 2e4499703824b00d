#include "support/container.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace offwake::test {
namespace {

// The children of every thread of `pid` (/proc/PID/task/TID/children).
std::vector<uint32_t> children_of(uint32_t pid) {
  std::vector<uint32_t> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (uint32_t child; in >> child;) out.push_back(child);
  }
  return out;
}

// The pids of /proc/PID/status's NSpid line, outermost first; empty if the process is gone.
std::vector<uint32_t> ns_pids(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::vector<uint32_t> out;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    for (uint32_t p; fields >> p;) out.push_back(p);
  }
  return out;
}

}  // namespace

Container::Container(ContainerOptions options) : options_(std::move(options)), root_(std::make_unique<TempDir>()) {
  namespace fs = std::filesystem;
  if (options_.path.empty() || options_.path[0] != '/') throw std::runtime_error("Container: path must be absolute");
  const fs::path inside = root_->path() + options_.path;
  fs::create_directories(inside.parent_path());
  fs::copy_file(options_.binary, inside, fs::copy_options::overwrite_existing);
  fs::permissions(inside, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  // --kill-child: killing unshare (Spawned's end) kills the container's init, and with it the
  // whole pid namespace.
  std::vector<std::string> argv = {"unshare", "--mount", "--pid", "--uts", "--fork", "--kill-child",
                                   "chroot",  root_->path(), options_.path};
  argv.insert(argv.end(), options_.args.begin(), options_.args.end());
  if (!options_.cgroup.empty()) {
    // The shell joins the cgroup, then becomes unshare: everything after is in it.
    argv.insert(argv.begin(), {"sh", "-c", "echo $$ >\"$0/cgroup.procs\" && exec \"$@\"", options_.cgroup});
  }
  process_ = std::make_unique<Spawned>(argv);
}

Container::~Container() = default;  // Spawned kills and reaps; then TempDir removes the root

std::map<uint32_t, uint32_t> Container::host_pids() const {
  std::map<uint32_t, uint32_t> out;
  std::vector<uint32_t> todo = {static_cast<uint32_t>(process_->pid())};
  while (!todo.empty()) {
    const uint32_t pid = todo.back();
    todo.pop_back();
    const std::vector<uint32_t> ids = ns_pids(pid);
    // In a pid namespace below the host's: the host's pid first, its own last.
    if (ids.size() >= 2) out[ids.back()] = ids.front();
    for (uint32_t child : children_of(pid)) todo.push_back(child);
  }
  return out;
}

}  // namespace offwake::test
