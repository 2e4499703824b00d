#include "synth/cgroups.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

namespace offwake {

namespace {

// mountinfo escapes space, tab, newline and backslash in paths as \ooo.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The path perf records for the directory `rel` below the mount (rel "" is the mount point).
std::string record_path(const Cgroup2Mount& m, const std::string& rel) {
  std::string root = m.root == "/" ? "" : m.root;
  return rel.empty() && root.empty() ? "/" : root + (rel.empty() ? "" : "/" + rel);
}

}  // namespace

std::optional<Cgroup2Mount> find_cgroup2_mount(const std::string& mountinfo) {
  std::istringstream in(mountinfo);
  std::string line;
  // "36 35 98:0 /root /mnt rw,noatime master:1 - cgroup2 cgroup2 rw": optional fields up to
  // the "-", then the file system type.
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::vector<std::string> fields;
    for (std::string w; f >> w;) fields.push_back(w);
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash < 5 || dash + 1 >= fields.size() || fields[dash + 1] != "cgroup2") continue;
    return Cgroup2Mount{unescape(fields[4]), unescape(fields[3])};
  }
  return std::nullopt;
}

std::optional<Cgroup2Mount> cgroup2_mount() {
  std::ifstream in("/proc/self/mountinfo");
  std::stringstream text;
  text << in.rdbuf();
  return find_cgroup2_mount(text.str());
}

std::string cgroup_dir(const std::string& path, const std::optional<Cgroup2Mount>& mount) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path;
  if (!mount || path.empty() || path[0] != '/') return path;
  // Paths are shown relative to the mount's root (a container's may be a subtree).
  std::string rel = path;
  if (mount->root != "/") {
    if (rel.rfind(mount->root, 0) != 0) return path;
    rel = rel.substr(mount->root.size());
  }
  const std::string dir = mount->mount_point + rel;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? dir : path;
}

Result<uint64_t> cgroup_id_of(const std::string& dir) {
  // A file_handle with room for the 8 bytes of a kernfs handle.
  struct {
    file_handle head;
    uint64_t id;
  } h{};
  h.head.handle_bytes = sizeof h.id;
  int mount_id = 0;
  if (name_to_handle_at(AT_FDCWD, dir.c_str(), &h.head, &mount_id, 0) != 0)
    return Error::from_errno("reading the cgroup id of " + dir);
  if (h.head.handle_bytes != sizeof h.id)
    return Error(dir + " is not a cgroup v2 directory (a handle of " + std::to_string(h.head.handle_bytes) + " bytes)",
                 EINVAL);
  uint64_t id = 0;
  std::memcpy(&id, h.head.f_handle, sizeof id);
  return id;
}

void CgroupNames::scan() {
  if (!mount_) return;
  // Depth first, without recursion; a directory gone meanwhile is skipped.
  std::vector<std::string> todo = {""};
  while (!todo.empty()) {
    const std::string rel = std::move(todo.back());
    todo.pop_back();
    const std::string dir = mount_->mount_point + (rel.empty() ? "" : "/" + rel);
    auto id = cgroup_id_of(dir);
    if (!id) continue;
    known_[*id] = record_path(*mount_, rel);
    std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
    if (!d) continue;
    while (dirent* e = readdir(d.get())) {
      if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      todo.push_back(rel.empty() ? e->d_name : rel + "/" + e->d_name);
    }
  }
}

Status CgroupNames::write(uint64_t id, const std::string& path, const RecordCallback& emit) {
  perfdata::CgroupRecord r;
  r.id = id;
  r.path = path;
  OFFWAKE_TRY(emit(r));
  written_.insert(id);
  return ok_status();
}

Status CgroupNames::begin_file(const RecordCallback& emit) {
  written_.clear();
  unnamed_.clear();
  std::map<uint64_t, std::string> before;
  before.swap(known_);
  scan();
  for (const auto& [id, path] : known_) OFFWAKE_TRY(write(id, path, emit));
  // Gone since an earlier file: still known, for a sample of this file that names one.
  known_.merge(before);
  return ok_status();
}

void CgroupNames::observe(const perfdata::CgroupRecord& r) {
  known_[r.id] = r.path;
  written_.insert(r.id);
}

Status CgroupNames::describe(uint64_t id, const RecordCallback& emit) {
  if (id == 0 || written_.count(id) || unnamed_.count(id)) return ok_status();
  auto it = known_.find(id);
  if (it == known_.end()) {
    scan();  // made since, and its record from the kernel was lost
    it = known_.find(id);
  }
  if (it == known_.end()) {
    unnamed_.insert(id);
    return ok_status();
  }
  return write(id, it->second, emit);
}

}  // namespace offwake
