// perf's build-id cache, written by the recorder (synth/build_id_dir.h) and read by our report
// (symbolize/dso.h): perf's layout, each binary once, the size cap, every reason a binary is not
// cached, and a binary found by its build id when its path is missing here or holds another
// file. The binaries are this test's own mapped executable and test workloads.
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/paths.h"
#include "support/run.h"
#include "support/scoped_env.h"
#include "symbolize/dso.h"
#include "synth/build_id_dir.h"
#include "synth/elf_file.h"
#include "synth/proc_maps.h"

namespace offwake {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// This process's executable mapping of its own binary, as the recorder sees mappings.
MappedFile own_binary() {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  auto maps = read_proc_maps(getpid());
  EXPECT_TRUE(maps);
  for (const ProcMapping& m : *maps)
    if (m.path == self && m.perms.size() > 2 && m.perms[2] == 'x') return mapped_file(getpid(), m);
  ADD_FAILURE() << "no executable mapping of " << self;
  return {};
}

perfdata::BuildId build_id_of(const std::string& path) {
  auto elf = ElfFile::open(path);
  EXPECT_TRUE(elf) << elf.error().message();
  return elf ? elf->build_id() : perfdata::BuildId{};
}

TEST(BuildIdCache, ABinaryGoesInInPerfsLayout) {
  TempDir dir;
  const MappedFile self = own_binary();
  const perfdata::BuildId id = build_id_of(self.path);
  ASSERT_FALSE(id.empty());
  BuildIdDir cache(dir.path());
  EXPECT_EQ(cache.add(self, {}), id);  // its build id, read through the process

  // DIR/.build-id/xx/rest -> ../../<path>/<hex>, and DIR/<path>/<hex>/elf the binary.
  const std::string hex = id.hex();
  EXPECT_EQ(build_id_link(dir.path(), id), dir.path() + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2));
  EXPECT_EQ(fs::read_symlink(build_id_link(dir.path(), id)).string(), "../.." + self.path + "/" + hex);
  const std::string elf = dir.path() + self.path + "/" + hex + "/elf";
  EXPECT_EQ(build_id_cached_file(dir.path(), id), build_id_link(dir.path(), id) + "/elf");
  EXPECT_EQ(test::run("cmp " + self.path + " " + elf).status, 0);

  const BuildIdCacheCounts c = cache.counts();
  EXPECT_EQ(c.count(CacheOutcome::kAdded), 1u);
  EXPECT_EQ(c.added_bytes, fs::file_size(self.path));
  EXPECT_EQ(c.not_cached(), 0u);
  EXPECT_TRUE(c.failed.empty());

  // Once per build id: another mapping of it, or another recording, finds it there.
  cache.add(self, id);
  EXPECT_EQ(cache.counts().count(CacheOutcome::kAdded), 1u);
  BuildIdDir next(dir.path());
  EXPECT_EQ(next.add(self, id), id);
  EXPECT_EQ(next.counts().count(CacheOutcome::kAlready), 1u);
  EXPECT_EQ(next.counts().added_bytes, 0u);
}

// The cap: a binary that would take the recording past it is not added, and is counted.
TEST(BuildIdCache, TheSizeCapHolds) {
  TempDir dir;
  const MappedFile self = own_binary();
  BuildIdDir cache(dir.path(), fs::file_size(self.path) - 1);
  cache.add(self, {});
  const BuildIdCacheCounts c = cache.counts();
  EXPECT_EQ(c.count(CacheOutcome::kOverCap), 1u);
  EXPECT_EQ(c.added_bytes, 0u);
  EXPECT_TRUE(fs::is_empty(dir.path()));
  ASSERT_EQ(c.failed.size(), 1u);
  EXPECT_NE(c.failed[0].find(self.path), std::string::npos);
  EXPECT_NE(c.failed[0].find("over the size cap"), std::string::npos);
}

// A process gone: unreadable, unless the kernel said which build id it mapped and our file of
// that name has it (a host binary outlives a short-lived process); one of that name with another
// build id is not taken for it.
TEST(BuildIdCache, AGoneProcessFallsBackOnlyToTheSameBuildId) {
  TempDir dir;
  constexpr pid_t kGone = 4'000'001;  // above PID_MAX_LIMIT: never in /proc
  const std::string pipe = test::kWorkloads + "wl_pipe", sleep = test::kWorkloads + "wl_sleep";
  BuildIdDir cache(dir.path());
  const MappedFile gone_pipe{kGone, 0x400000, 0x401000, pipe};
  cache.add(gone_pipe, {});
  EXPECT_EQ(cache.counts().count(CacheOutcome::kGone), 1u);
  // wl_sleep's build id under wl_pipe's name: the file there is another.
  const MappedFile renamed{kGone, 0x400000, 0x401000, pipe};
  cache.add(renamed, build_id_of(sleep));
  EXPECT_EQ(cache.counts().count(CacheOutcome::kChanged), 1u);
  EXPECT_TRUE(build_id_cached_file(dir.path(), build_id_of(sleep)).empty());
  // The right build id: taken from our file. The first sight, known by its name only, stays
  // counted as gone.
  EXPECT_EQ(cache.add(gone_pipe, build_id_of(pipe)), build_id_of(pipe));
  EXPECT_FALSE(build_id_cached_file(dir.path(), build_id_of(pipe)).empty());
  const BuildIdCacheCounts c = cache.counts();
  EXPECT_EQ(c.count(CacheOutcome::kAdded), 1u);
  EXPECT_EQ(c.count(CacheOutcome::kGone), 1u);
}

TEST(BuildIdCache, WhatIsNotABinaryWithABuildIdIsCountedByCause) {
  TempDir dir;
  const pid_t self = getpid();
  std::ofstream(dir.file("text")) << "not an ELF file\n";
  ASSERT_EQ(test::run("objcopy --remove-section .note.gnu.build-id " + test::kWorkloads + "wl_pipe " +
                      dir.file("no_build_id")).status,
            0);
  const std::string cache_dir = dir.file("cache");
  BuildIdDir cache(cache_dir);
  // No mapping at that range: read through the process's root, as the path names it.
  cache.add({self, 1, 2, dir.file("text")}, {});
  cache.add({self, 1, 2, dir.file("no_build_id")}, {});
  cache.add({self, 1, 2, "/a/../etc/passwd"}, {});
  cache.add({self, 1, 2, "relative/name"}, {});
  const BuildIdCacheCounts c = cache.counts();
  EXPECT_EQ(c.count(CacheOutcome::kNotElf), 1u);
  EXPECT_EQ(c.count(CacheOutcome::kNoBuildId), 1u);
  EXPECT_EQ(c.count(CacheOutcome::kBadName), 2u);
  EXPECT_EQ(c.not_cached(), 4u);
  EXPECT_EQ(c.failed.size(), 4u);
  EXPECT_FALSE(fs::exists(cache_dir));
}

// The report finds a binary by its build id in the cache PERF_BUILDID_DIR names, whether its
// path is missing here or holds another file; without the cache it does not.
TEST(BuildIdCache, TheReportFindsBinariesByBuildId) {
  TempDir dir;
  const std::string pipe = test::kWorkloads + "wl_pipe";
  const perfdata::BuildId id = build_id_of(pipe);
  BuildIdDir cache(dir.path());
  ASSERT_EQ(cache.add({getpid(), 0, 0, pipe}, id), id);  // read through /proc/self/root
  ASSERT_FALSE(build_id_cached_file(dir.path(), id).empty());

  test::ScopedEnv cache_dir("PERF_BUILDID_DIR", dir.path());
  for (const std::string& name : {std::string("/app/not_on_this_host"), test::kWorkloads + "wl_sleep"}) {
    SCOPED_TRACE(name);
    symbolize::Dso dso(name, id, symbolize::DsoKind::kElf);
    EXPECT_EQ(dso.state(), symbolize::DsoState::kLoaded);
    EXPECT_EQ(dso.source(), build_id_link(dir.path(), id) + "/elf");
    auto fn = ElfFile::open(pipe)->find_function("wl_wait_for_message");
    ASSERT_TRUE(fn);
    // In the DSO's address space, as a mapping turns an address into it: a file offset.
    const symbolize::Symbol* s = dso.find(ElfFile::open(pipe)->file_offset_of(fn->value).value_or(0));
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->name, "wl_wait_for_message");
  }
  cache_dir.set(dir.file("empty"));
  symbolize::Dso missing("/app/not_on_this_host", id, symbolize::DsoKind::kElf);
  EXPECT_EQ(missing.state(), symbolize::DsoState::kMissing);
  symbolize::Dso other(test::kWorkloads + "wl_sleep", id, symbolize::DsoKind::kElf);
  EXPECT_EQ(other.state(), symbolize::DsoState::kBuildIdMismatch);
}

}  // namespace
}  // namespace offwake
