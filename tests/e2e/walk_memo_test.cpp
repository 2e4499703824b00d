// Remembered user stack walks (bpf-progs/walk_memo.bpf.h): a thread's walk that repeats its
// last one from the same place, with the same registers and every stack word that walk read
// unchanged, is replayed, not walked. The workload blocks, and wakes, through two call paths
// with the same frames (tests/workloads/wl_memo_paths.c, -O2, walked by its unwind tables), so
// the registers are the same whichever path a block took, and only the return addresses on the
// stack tell the paths apart. Each path's recorded time and blocks must be its own, read by
// Debian's perf script: a replay that served the last block's stack would put one path's
// blocks under the other.
#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <utility>
#include <regex>
#include <string>

#include "support/blocked_samples.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "support/truth.h"

namespace offwake::test {
namespace {

const std::string kMemoPaths = kWorkloads + "wl_memo_paths";

// The summary's count of replayed walks ("N of them the thread's last walk ..., replayed").
uint64_t replayed_walks(const std::string& record_stderr) {
  std::smatch m;
  static const std::regex re("; (\\d+) of them the thread's last walk from the same place, replayed");
  return std::regex_search(record_stderr, m, re) ? std::stoull(m[1]) : 0;
}

void expect_each_path_its_own(const RecordRun& r) {
  expect_clean(r);
  ASSERT_EQ(r.truth.size(), 2u) << r.record.out;
  for (const Truth& t : r.truth) {
    const bool a = t.function == "memo_path_a";
    const std::string other = a ? "memo_path_b" : "memo_path_a";
    const std::string other_waker = a ? "memo_wake_b" : "memo_wake_a";
    Blocked b = blocked_in(r.samples, t, blocks_without_waker(r.record.err));
    expect_truth_blocks(b, t.function);  // time within 5%, blocks as many
    for (const ScriptSample* s : b.blocked) {
      EXPECT_FALSE(s->has_frame(other)) << t.function << " and " << other << " in one stack";
      EXPECT_TRUE(s->has_frame("memo_read"));
      EXPECT_TRUE(s->has_frame("main")) << "a complete stack";
    }
    ASSERT_FALSE(b.wakers.empty());
    for (const ScriptSample* w : b.wakers) {
      EXPECT_EQ(w->tid, t.waker_tid);
      EXPECT_TRUE(w->has_frame(t.waker_function)) << t.function << " woken without " << t.waker_function;
      EXPECT_FALSE(w->has_frame(other_waker)) << t.function << " woken by " << other_waker;
      EXPECT_TRUE(w->has_frame("memo_write"));
    }
  }
}

// Each path's block after its first repeats a remembered walk or kernel stack, whichever path
// came last (MEMO_WAYS, bpf-progs/walk_memo.bpf.h): the child's where it blocks, the
// parent's where it wakes it, and the parent's own pause before each wakeup. So about three
// replays a block of the workload's truth, 10% spared for stacks not taken where they repeat.
void expect_three_replays_a_block(uint64_t replayed, const RecordRun& r) {
  uint64_t blocks = 0;
  for (const Truth& t : r.truth) blocks += t.count;
  EXPECT_GE(static_cast<double>(replayed), 0.9 * 3.0 * static_cast<double>(blocks))
      << blocks << " blocks\n" << r.record.err;
}

// 120 blocks in runs of one to three on a path: about half on the last block's path, half not
// (the words differ from the last walk's, the same as the walk before on that path).
TEST(WalkMemo, ReplayedWalksKeepEachBlocksOwnPath) {
  TempDir dir;
  RecordRun r = record_and_script(dir, "-- " + kMemoPaths + " -n 120 -m 5");
  expect_each_path_its_own(r);
  // Else this test would not test replays: the blocked thread's and the waker's repeats.
  // With one walk a site (before), a block on the other path than the last missed both: 240
  // of 361 here.
  expect_three_replays_a_block(replayed_walks(r.record.err), r);
}

// The same, lazily (blocks sampled, stacks taken once kept: some walks at switch-out, others
// by task work or at switch-in), every block kept: the period is below the blocks' length.
TEST(WalkMemo, ReplayedWalksKeepEachBlocksOwnPathWhenSampled) {
  TempDir dir;
  RecordRun r = record_and_script(dir, "--sample-period 1000 -- " + kMemoPaths + " -n 120 -m 5");
  expect_each_path_its_own(r);
}

// The summary's count of kernel stacks checked, not unwound ("(N kernel stacks the thread's
// last from the same place, ...").
uint64_t replayed_kernel_stacks(const std::string& record_stderr) {
  std::smatch m;
  static const std::regex re("\\((\\d+) kernel stacks the thread's last from the same place");
  return std::regex_search(record_stderr, m, re) ? std::stoull(m[1]) : 0;
}

// A sample's frames, leaf first, for a failure's message.
std::string frames_of(const ScriptSample& s) {
  std::string out;
  for (const ScriptFrame& f : s.frames) out += " " + f.sym;
  return out;
}

bool has_any_frame(const ScriptSample& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s.has_frame(n)) return true;
  return false;
}

// The same with the paths under a frame of 12 KiB (-w): the words of a walk lie over more stack
// than a replay reads at once (WINDOW, bpf-progs/maps.bpf.h), so a replay checks them a window
// at a time, and must still tell the paths apart.
TEST(WalkMemo, ReplayedWalksOverAWideFrameKeepEachBlocksOwnPath) {
  TempDir dir;
  RecordRun r = record_and_script(dir, "-- " + kMemoPaths + " -w -n 120 -m 5");
  expect_each_path_its_own(r);
  for (const ScriptSample& s : r.samples) {
    if (!s.has_frame("memo_path_a") && !s.has_frame("memo_path_b")) continue;
    EXPECT_TRUE(s.has_frame("memo_wide")) << frames_of(s);
  }
  expect_three_replays_a_block(replayed_walks(r.record.err), r);
}

// --check-replays' count ("N replayed kernel stacks unwound as well, M of them different"):
// {N, M}, or nothing if the line is missing.
std::optional<std::pair<uint64_t, uint64_t>> checked_replays(const std::string& record_stderr) {
  std::smatch m;
  static const std::regex re("(\\d+) replayed kernel stacks unwound as well, (\\d+) of them different");
  if (!std::regex_search(record_stderr, m, re)) return std::nullopt;
  return std::make_pair(std::stoull(m[1]), std::stoull(m[2]));
}

// Remembered kernel stacks (bpf-progs/kernel_memo.bpf.h): with -k, path b blocks on a unix
// socket, and its waker writes one, where path a uses the pipe: the same user frames, other
// kernel stacks, in runs of one to three. Each block's kernel stack and its waker's are its
// own path's, never the last block's, and its time and blocks are its path's truth. Recorded
// with --check-replays: every replayed stack is unwound as well, and none may differ.
TEST(KernelMemo, ReplayedKernelStacksKeepEachBlocksOwnPath) {
  TempDir dir;
  RecordRun r = record_and_script(dir, "--check-replays -- " + kMemoPaths + " -k -n 120 -m 5");
  expect_each_path_its_own(r);
  for (const Truth& t : r.truth) {
    const bool pipe = t.function == "memo_path_a";
    Blocked b = blocked_in(r.samples, t, blocks_without_waker(r.record.err));
    // A block whose switch-in the kernel did not trace has no kernel stack ("ended late").
    for (const ScriptSample* s : with_kernel_stacks(b, r.record.err)) {
      // anon_pipe_read from Linux 6.16, pipe_read before.
      EXPECT_EQ(has_any_frame(*s, {"anon_pipe_read", "pipe_read"}), pipe) << t.function << ":" << frames_of(*s);
      EXPECT_EQ(s->has_frame("unix_stream_read_generic"), !pipe) << t.function << ":" << frames_of(*s);
    }
    for (const ScriptSample* w : b.wakers) {
      EXPECT_EQ(has_any_frame(*w, {"anon_pipe_write", "pipe_write"}), pipe) << t.function << ":" << frames_of(*w);
      EXPECT_EQ(w->has_frame("unix_stream_sendmsg"), !pipe) << t.function << ":" << frames_of(*w);
    }
  }
  // Else this test would not test replays. With one stack a site (before), a block on the
  // other path than the last missed both: 241 of 482 here.
  const uint64_t replayed = replayed_kernel_stacks(r.record.err);
  expect_three_replays_a_block(replayed, r);
  const auto checked = checked_replays(r.record.err);
  ASSERT_TRUE(checked.has_value()) << r.record.err;
  EXPECT_EQ(checked->first, replayed) << "every replay unwound as well";
  EXPECT_EQ(checked->second, 0u) << "replays that differ from their unwind";
}

}  // namespace
}  // namespace offwake::test
