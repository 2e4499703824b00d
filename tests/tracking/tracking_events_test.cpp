// The tracking events read back as the kernel wrote them, while the kernel goes on writing:
// no record is skipped between two reads of a ring buffer, however often it is read.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>
#include <variant>
#include <vector>

#include "tracking/tracking_events.h"

namespace offwake {
namespace {

// Forks `n` children that exit at once, one after another, and returns their pids.
std::vector<uint32_t> fork_children(int n) {
  std::vector<uint32_t> pids;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid == 0) _exit(0);
    if (pid < 0) break;
    pids.push_back(static_cast<uint32_t>(pid));
    waitpid(pid, nullptr, 0);
  }
  return pids;
}

// A reader that drains as fast as it can, while children come and go: their FORK and EXIT
// records land while it reads. Each child's two records are read back, or counted in a LOST
// record. (libperf's perf_mmap__read_done() moves the read position to the ring's head as it
// is then, past records written since the last one read, which were lost without a word:
// one child in 1,300 in 2 of 31 runs of Edges.EveryChildOfAForkStormIsRecorded's storm.)
TEST(TrackingEvents, ADrainWhileTheKernelWritesMissesNoRecord) {
  auto tracking = TrackingEvents::open();
  ASSERT_TRUE(tracking) << tracking.error().message();
  tracking->enable();
  const uint32_t self = static_cast<uint32_t>(getpid());
  std::set<uint32_t> forked, exited;
  uint64_t lost = 0;
  auto emit = [&](const perfdata::Record& r) -> Status {
    if (const auto* t = std::get_if<perfdata::TaskRecord>(&r)) {
      if (t->ppid == self && t->pid != self) (t->exit ? exited : forked).insert(t->pid);
    } else if (const auto* l = std::get_if<perfdata::LostRecord>(&r)) {
      lost += l->lost;
    }
    return ok_status();
  };
  std::atomic<bool> done{false};
  std::vector<uint32_t> children;
  std::thread forker([&] {
    children = fork_children(4000);
    done = true;
  });
  // The forker is joined before any assertion can return.
  uint64_t passes = 0;
  Status drained = ok_status();
  while (!done && drained) {
    drained = tracking->drain(emit);
    ++passes;
  }
  forker.join();
  ASSERT_TRUE(drained) << drained.error().message();
  tracking->disable();
  ASSERT_TRUE(tracking->drain(emit));
  ASSERT_EQ(children.size(), 4000u);
  EXPECT_EQ(tracking->undecodable(), 0u);
  EXPECT_EQ(lost, 0u) << "the ring buffers are large enough for a drain this frequent";
  size_t no_fork = 0, no_exit = 0;
  for (uint32_t pid : children) {
    no_fork += !forked.count(pid);
    no_exit += !exited.count(pid);
  }
  EXPECT_EQ(no_fork, 0u) << "of " << children.size() << " children, in " << passes << " drains";
  EXPECT_EQ(no_exit, 0u) << "of " << children.size() << " children, in " << passes << " drains";
}

}  // namespace
}  // namespace offwake
