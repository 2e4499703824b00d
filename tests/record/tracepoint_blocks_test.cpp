// The tracepoint back end's helpers: kernel threads from /proc, and the leading frames cut
// from blocked stacks (the tracing machinery, and .sched.text unless --sched-frames); and
// that a machine without what it needs makes it unavailable, not failed.
#include "record/tracepoint_blocks.h"

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "support/run.h"
#include "tracking/sched_tracepoints.h"

namespace offwake {
namespace {

TEST(TracepointBlocks, KernelThreadsFromProc) {
  EXPECT_TRUE(proc_is_kernel_thread(2));  // kthreadd
  EXPECT_TRUE(proc_is_kernel_thread(0));  // the idle task
  EXPECT_FALSE(proc_is_kernel_thread(static_cast<uint32_t>(getpid())));
  EXPECT_FALSE(proc_is_kernel_thread(1));              // init is a user process
  EXPECT_FALSE(proc_is_kernel_thread(4194304 + 1));    // no such thread
}

TEST(TracepointBlocks, LeadingFramesToDrop) {
  auto k = Kallsyms::load();
  ASSERT_TRUE(k) << k.error().message();
  auto kallsyms = std::make_shared<const Kallsyms>(std::move(k).value());
  auto schedule = kallsyms->address_of("schedule");
  auto traceiter = kallsyms->address_of("__traceiter_sched_switch");
  auto pipe_read = kallsyms->address_of("anon_pipe_read");
  if (!pipe_read) pipe_read = kallsyms->address_of("pipe_read");
  ASSERT_TRUE(schedule && traceiter && pipe_read) << "kallsyms without the expected symbols";

  auto drop = leading_frames_to_drop(kallsyms, false);
  EXPECT_TRUE(drop(*schedule + 1));
  EXPECT_TRUE(drop(*traceiter + 1));
  EXPECT_FALSE(drop(*pipe_read + 1));

  auto keep_sched = leading_frames_to_drop(kallsyms, true);  // --sched-frames
  EXPECT_FALSE(keep_sched(*schedule + 1));
  EXPECT_TRUE(keep_sched(*traceiter + 1));
}

void expect_unavailable(const Result<std::unique_ptr<BlockSource>>& r, const std::string& mentions) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kUnavailable)
      << error_kind_name(r.error().kind()) << ": " << r.error().message();
  EXPECT_NE(r.error().message().find(mentions), std::string::npos) << r.error().message();
}

TEST(TracepointBlocks, WithoutTracefsTheBackEndIsUnavailable) {
  test::TempDir dir;
  TracepointBlockOptions o;
  o.tracefs = dir.file("not-mounted");
  expect_unavailable(open_tracepoint_blocks(o), "tracefs is not mounted at " + o.tracefs);
  // Mounted, but without the scheduler's events (a kernel without them, or a bare instance).
  ASSERT_EQ(mkdir(o.tracefs.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((o.tracefs + "/events").c_str(), 0755), 0);
  expect_unavailable(open_tracepoint_blocks(o), "sched_switch/format");
}

// perf_event_open refused for want of CAP_PERFMON (perf_event_paranoid 2 on this project's
// machines, and the default of most): the tracepoints are unavailable to this user.
TEST(TracepointBlocks, WithoutPrivilegesTheTracepointsAreUnavailable) {
  auto decoder = sched::SchedDecoder::from_tracefs();
  ASSERT_TRUE(decoder.ok()) << decoder.error().message();
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(2);
    auto tp = sched::SchedTracepoints::open(std::move(decoder).value(), {.max_stack = 127, .mmap_pages = 1});
    // The kind, a tab, the message.
    const std::string out =
        tp.ok() ? "opened\t" : std::string(error_kind_name(tp.error().kind())) + "\t" + tp.error().message();
    if (write(p[1], out.data(), out.size()) < 0) _exit(3);
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(out.substr(0, out.find('\t')), error_kind_name(ErrorKind::kUnavailable)) << out;
  EXPECT_NE(out.find("needs root, or CAP_PERFMON"), std::string::npos) << out;
}

}  // namespace
}  // namespace offwake
