// Cgroups as the readers name them (report/cgroups.h): the container id rule, --cgroup's
// "this path or below", and the id -> path table of a recording's PERF_RECORD_CGROUP records;
// and where the recorder finds the cgroup2 hierarchy (synth/cgroups.h), from mountinfo texts.
#include "report/cgroups.h"

#include <gtest/gtest.h>

#include "synth/cgroups.h"

namespace offwake::report {
namespace {

const std::string kId = "4f2a1c9e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a19";
static_assert(sizeof "4f2a1c9e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a19" == 65);

TEST(ContainerId, TheRuntimesNamings) {
  EXPECT_EQ(container_id("/system.slice/docker-" + kId + ".scope"), kId);
  EXPECT_EQ(container_id("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678.slice/cri-containerd-" +
                         kId + ".scope"),
            kId);
  EXPECT_EQ(container_id("/machine.slice/libpod-" + kId + ".scope/container"), kId);  // below it: still its
  EXPECT_EQ(container_id("/kubepods/burstable/pod0b3ec0a0-5e2c-4d2e-9c64-3f1b2a9d8e7f/" + kId), kId);
  EXPECT_EQ(container_id("/docker/" + kId), kId);
  EXPECT_EQ(container_id("/crio-" + kId), kId);
  EXPECT_EQ(container_id("/lxc.payload:" + kId), kId);
}

TEST(ContainerId, TheLastComponentThatLooksLikeOneWins) {
  const std::string other(64, 'a');
  EXPECT_EQ(container_id("/docker-" + other + ".scope/" + kId), kId);
  EXPECT_EQ(container_id("/" + kId + "/docker-" + other + ".scope"), other);
}

TEST(ContainerId, NothingElseLooksLikeOne) {
  EXPECT_EQ(container_id(""), "");
  EXPECT_EQ(container_id("/"), "");
  EXPECT_EQ(container_id("/system.slice/sshd.service"), "");
  EXPECT_EQ(container_id("/user.slice/user-1000.slice/session-3.scope"), "");
  EXPECT_EQ(container_id("/docker-" + kId.substr(1) + ".scope"), "");      // 63 digits
  EXPECT_EQ(container_id("/docker-" + kId + "0.scope"), "");               // 65
  std::string upper = kId;
  upper[0] = 'F';
  EXPECT_EQ(container_id("/docker-" + upper + ".scope"), "");              // not as runtimes write it
  std::string letter = kId;
  letter[5] = 'g';
  EXPECT_EQ(container_id("/" + letter), "");
  EXPECT_EQ(container_id(kId), kId);  // a bare id (a path relative to nothing) is one too
  EXPECT_EQ(container_id("/pod" + kId), "");  // a prefix without a separator is part of the name
}

TEST(CgroupUnder, ThePathOrBelowIt) {
  EXPECT_TRUE(cgroup_under("/a", "/a"));
  EXPECT_TRUE(cgroup_under("/a/b", "/a"));
  EXPECT_TRUE(cgroup_under("/a/b", "/a/"));
  EXPECT_FALSE(cgroup_under("/ab", "/a"));
  EXPECT_FALSE(cgroup_under("/a", "/a/b"));
  EXPECT_TRUE(cgroup_under("/a", "/"));
  EXPECT_TRUE(cgroup_under("/", "/"));
  EXPECT_FALSE(cgroup_under("", "/"));          // a sample without a cgroup is in none
  EXPECT_FALSE(cgroup_under(kUnknownCgroup, "/"));  // nor one the recording does not name
}

TEST(CgroupTable, PathsFromTheRecords) {
  CgroupTable t;
  t.observe(perfdata::Record{perfdata::CgroupRecord{1, "/", {}}});
  t.observe(perfdata::Record{perfdata::CgroupRecord{42, "/system.slice", {}}});
  t.observe(perfdata::Record{perfdata::CommRecord{}});
  EXPECT_EQ(t.path(0), "");
  EXPECT_EQ(t.path(1), "/");
  EXPECT_EQ(t.path(42), "/system.slice");
  EXPECT_EQ(t.path(43), kUnknownCgroup);
  // An id given again (a cgroup renamed, and so reported again) takes its latest path.
  t.observe(perfdata::Record{perfdata::CgroupRecord{42, "/moved", {}}});
  EXPECT_EQ(t.path(42), "/moved");
}

TEST(Cgroup2Mount, FoundInMountinfo) {
  // A hybrid hierarchy (v1 controllers, v2 beside them), as on this project's machines.
  const std::string hybrid =
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n";
  auto m = find_cgroup2_mount(hybrid);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mount_point, "/sys/fs/cgroup/unified");
  EXPECT_EQ(m->root, "/");
  // A container's view of its own subtree, at a path with a space (escaped as \040).
  auto view = find_cgroup2_mount("100 99 0:30 /docker/abc /sys/fs/my\\040cgroup ro - cgroup2 cgroup2 rw\n");
  ASSERT_TRUE(view);
  EXPECT_EQ(view->mount_point, "/sys/fs/my cgroup");
  EXPECT_EQ(view->root, "/docker/abc");
  EXPECT_FALSE(find_cgroup2_mount("32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"));
  EXPECT_FALSE(find_cgroup2_mount("garbage\n- cgroup2\n"));
  EXPECT_FALSE(find_cgroup2_mount(""));
}

}  // namespace
}  // namespace offwake::report
