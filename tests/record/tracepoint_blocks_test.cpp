// The tracepoint back end's helpers: kernel threads from /proc, and the leading frames cut
// from blocked stacks (the tracing machinery, and .sched.text unless --sched-frames).
#include "record/tracepoint_blocks.h"

#include <unistd.h>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace offwake
