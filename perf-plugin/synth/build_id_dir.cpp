#include "synth/build_id_dir.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "synth/elf_file.h"
#include "util/fd.h"

namespace offwake {

namespace {

// mkdir -p, mode 0755 as perf makes them; true if `dir` is a directory now.
bool make_dirs(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  const size_t slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(dir.substr(0, slash))) return false;
  return ::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// A name safe to put under the cache directory: absolute, without "." or ".." components.
bool safe_name(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  size_t at = 1;
  while (at <= path.size()) {
    size_t next = path.find('/', at);
    if (next == std::string::npos) next = path.size();
    const std::string part = path.substr(at, next - at);
    if (part == "." || part == "..") return false;
    at = next + 1;
  }
  return true;
}

CacheOutcome open_failure(int err) {
  return err == EACCES || err == EPERM ? CacheOutcome::kPermission : CacheOutcome::kGone;
}

// Copies `size` bytes of `in` into a new file `to` (through a temporary name, so that a reader
// never sees half a binary); false if that failed, leaving nothing behind.
bool copy_file(int in, uint64_t size, mode_t mode, const std::string& to) {
  const std::string tmp = to + ".tmp" + std::to_string(getpid());
  UniqueFd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!out.valid()) return false;
  off_t offset = 0;
  bool ok = true;
  while (ok && static_cast<uint64_t>(offset) < size) {
    const ssize_t n = sendfile(out.get(), in, &offset, size - static_cast<uint64_t>(offset));
    ok = n > 0;
  }
  ok = ok && ::fchmod(out.get(), mode) == 0;
  out.reset();
  if (ok && ::rename(tmp.c_str(), to.c_str()) == 0) return true;
  ::unlink(tmp.c_str());
  return false;
}

}  // namespace

std::string build_id_dir() {
  if (const char* dir = std::getenv("PERF_BUILDID_DIR"); dir && *dir) return dir;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.debug";
}

std::string build_id_link(const std::string& dir, const perfdata::BuildId& id) {
  const std::string hex = id.hex();
  return dir + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2);
}

std::string build_id_cached_file(const std::string& dir, const perfdata::BuildId& id) {
  if (id.empty()) return "";
  const std::string link = build_id_link(dir, id);
  struct stat st {};
  if (::stat((link + "/elf").c_str(), &st) == 0 && S_ISREG(st.st_mode)) return link + "/elf";
  if (::stat(link.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return link;
  return "";
}

std::string build_id_entry(const std::string& dir, const std::string& path, const perfdata::BuildId& id) {
  return dir + path + "/" + id.hex();
}

const char* cache_outcome_name(CacheOutcome o) {
  switch (o) {
    case CacheOutcome::kAdded: return "added";
    case CacheOutcome::kAlready: return "already cached";
    case CacheOutcome::kGone: return "process gone";
    case CacheOutcome::kPermission: return "permission denied";
    case CacheOutcome::kNotElf: return "not ELF";
    case CacheOutcome::kNoBuildId: return "no build id";
    case CacheOutcome::kChanged: return "changed since mapped";
    case CacheOutcome::kOverCap: return "over the size cap";
    case CacheOutcome::kWriteFailed: return "cache not writable";
    case CacheOutcome::kBadName: return "unsafe name";
  }
  return "unknown";
}

uint64_t BuildIdCacheCounts::not_cached() const {
  uint64_t n = 0;
  for (int i = 0; i < kCacheOutcomes; ++i)
    if (i != static_cast<int>(CacheOutcome::kAdded) && i != static_cast<int>(CacheOutcome::kAlready)) n += by_outcome[i];
  return n;
}

BuildIdDir::BuildIdDir(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

perfdata::BuildId BuildIdDir::add(const MappedFile& f, const perfdata::BuildId& expected) {
  const std::string key = expected.empty() ? "path " + f.path : expected.hex();
  auto it = seen_.find(key);
  // Done for good: cached, or a file that cannot be (not ELF, over the cap...). A file that
  // could not be read may be by another mapping of it.
  if (it != seen_.end() && it->second.outcome != CacheOutcome::kGone && it->second.outcome != CacheOutcome::kPermission)
    return expected;
  perfdata::BuildId found = expected;
  const CacheOutcome outcome = store(f, expected, found);
  // Known by its build id from now on, however it was first seen.
  if (!found.empty() && found.hex() != key) seen_.erase(key);
  Seen& s = seen_[found.empty() ? key : found.hex()];
  s.outcome = outcome;
  s.detail = f.path + " (pid " + std::to_string(f.pid) + ")";
  return found;
}

CacheOutcome BuildIdDir::store(const MappedFile& f, const perfdata::BuildId& expected, perfdata::BuildId& found) {
  if (!safe_name(f.path)) return CacheOutcome::kBadName;
  if (!expected.empty() && !build_id_cached_file(dir_, expected).empty()) return CacheOutcome::kAlready;
  // The process's file, else (with the build id the kernel saw, to check it by) ours of that
  // name: a host binary outlives the short-lived process that mapped it.
  std::vector<std::string> sources = f.sources();
  if (!expected.empty()) sources.push_back(f.path);
  CacheOutcome why = CacheOutcome::kGone;
  for (const std::string& source : sources) {
    UniqueFd fd(::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd.valid()) {
      if (why == CacheOutcome::kGone) why = open_failure(errno);
      continue;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return CacheOutcome::kNotElf;
    // The build id of what this descriptor reads (ElfFile opens it again by its /proc name).
    auto elf = ElfFile::open("/proc/self/fd/" + std::to_string(fd.get()));
    if (!elf) return elf.error().is(ErrorKind::kBadInput) ? CacheOutcome::kNotElf : open_failure(elf.error().errnum());
    if (elf->build_id().empty()) return CacheOutcome::kNoBuildId;
    if (!expected.empty() && !(elf->build_id() == expected)) {
      why = CacheOutcome::kChanged;
      continue;
    }
    found = elf->build_id();
    if (!build_id_cached_file(dir_, found).empty()) return CacheOutcome::kAlready;
    return copy_in(fd.get(), static_cast<uint64_t>(st.st_size), f.path, found);
  }
  return why;
}

// The binary `fd` reads goes in as DIR/<path>/<hex>/elf, a hard link to it where the cache is on
// its file system (as perf does), else a copy; then the link by build id.
CacheOutcome BuildIdDir::copy_in(int fd, uint64_t size, const std::string& path, const perfdata::BuildId& id) {
  if (added_bytes_ + size > max_bytes_) return CacheOutcome::kOverCap;
  const std::string entry = build_id_entry(dir_, path, id);
  const std::string elf = entry + "/elf";
  if (!make_dirs(entry)) return CacheOutcome::kWriteFailed;
  if (!exists(elf)) {
    struct stat st {};
    const mode_t mode = ::fstat(fd, &st) == 0 ? (st.st_mode & 0755) : 0755;
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, elf.c_str(), AT_SYMLINK_FOLLOW) != 0 && errno != EEXIST &&
        !copy_file(fd, size, mode, elf))
      return CacheOutcome::kWriteFailed;
  }
  const std::string link = build_id_link(dir_, id);
  const std::string hex = id.hex();
  if (!make_dirs(link.substr(0, link.rfind('/')))) return CacheOutcome::kWriteFailed;
  // Relative, as perf's: the cache can be moved whole.
  const std::string target = "../.." + path + "/" + hex;
  if (::symlink(target.c_str(), link.c_str()) != 0 && errno != EEXIST) return CacheOutcome::kWriteFailed;
  added_bytes_ += size;
  return CacheOutcome::kAdded;
}

BuildIdCacheCounts BuildIdDir::counts() const {
  BuildIdCacheCounts c;
  c.enabled = true;
  c.dir = dir_;
  c.max_bytes = max_bytes_;
  c.added_bytes = added_bytes_;
  for (const auto& [key, s] : seen_) {
    ++c.by_outcome[static_cast<int>(s.outcome)];
    if (s.outcome != CacheOutcome::kAdded && s.outcome != CacheOutcome::kAlready)
      c.failed.push_back(s.detail + ": " + cache_outcome_name(s.outcome));
  }
  return c;
}

}  // namespace offwake
