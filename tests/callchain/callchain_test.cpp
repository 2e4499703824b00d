// Callchain conversions: perf's marker-separated ip lists <-> frames, BPF stack halves ->
// frames, and what a callchain says about its leaf.
#include "callchain/callchain.h"
#include "callchain/tracing_frames.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <vector>

namespace offwake {
namespace {

using Ips = std::vector<uint64_t>;

Callchain make(std::initializer_list<Frame> frames) {
  Callchain c;
  for (const Frame& f : frames) c.push(f.ip, f.context);
  return c;
}

TEST(CallchainFromPerfIps, KernelThenUser) {
  Ips ips = {PERF_CONTEXT_KERNEL, 0xffffffff81000010, 0xffffffff81000020,
             PERF_CONTEXT_USER, 0x401000, 0x402000, 0x403000};
  auto c = Callchain::from_perf_ips(ips);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(*c, make({{0xffffffff81000010, FrameContext::kKernel},
                      {0xffffffff81000020, FrameContext::kKernel},
                      {0x401000, FrameContext::kUser},
                      {0x402000, FrameContext::kUser},
                      {0x403000, FrameContext::kUser}}));
}

TEST(CallchainFromPerfIps, HypervisorMarker) {
  Ips ips = {PERF_CONTEXT_HV, 0x10, PERF_CONTEXT_KERNEL, 0x20};
  auto c = Callchain::from_perf_ips(ips);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(*c, make({{0x10, FrameContext::kHypervisor}, {0x20, FrameContext::kKernel}}));
}

TEST(CallchainFromPerfIps, GuestMarkersAndGuestAnnouncementIsSkipped) {
  // The kernel writes PERF_CONTEXT_GUEST before a guest's own kernel/user markers.
  Ips ips = {PERF_CONTEXT_KERNEL, 0x1,
             PERF_CONTEXT_GUEST,  PERF_CONTEXT_GUEST_KERNEL, 0x2, 0x3,
             PERF_CONTEXT_GUEST_USER, 0x4};
  auto c = Callchain::from_perf_ips(ips);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(*c, make({{0x1, FrameContext::kKernel},
                      {0x2, FrameContext::kGuestKernel},
                      {0x3, FrameContext::kGuestKernel},
                      {0x4, FrameContext::kGuestUser}}));
}

TEST(CallchainFromPerfIps, GuestAnnouncementAloneGivesNoContext) {
  // PERF_CONTEXT_GUEST is not a context: a frame right after it still has none.
  Ips ips = {PERF_CONTEXT_GUEST, 0x2};
  auto c = Callchain::from_perf_ips(ips);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("entry 1"), std::string::npos) << c.error().message();
}

TEST(CallchainFromPerfIps, EntryBeforeAnyMarkerIsRejected) {
  Ips ips = {0x401000, PERF_CONTEXT_USER, 0x402000};
  auto c = Callchain::from_perf_ips(ips);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("entry 0"), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find("before any context marker"), std::string::npos)
      << c.error().message();
}

// A word in the markers' range that is no marker (a frame-pointer walk of code built without
// frame pointers stores what it reads): the frames of its context before it are kept, those
// after it left out until another context's marker, and the chain says it was cut. perf drops
// such a callchain and keeps the sample; a reader that refused the sample refused the file.
TEST(CallchainFromPerfIps, WordThatIsNoMarkerCutsItsContext) {
  for (uint64_t bad : {uint64_t(PERF_CONTEXT_MAX), uint64_t(-1), uint64_t(-100), uint64_t(0xffffffffffffff00ull)}) {
    SCOPED_TRACE(bad);
    Ips ips = {PERF_CONTEXT_KERNEL, 0xffffffff81000010, PERF_CONTEXT_USER, 0x401000, 0x402000, bad, 0x403000,
               PERF_CONTEXT_USER, 0x404000};
    auto c = Callchain::from_perf_ips(ips);
    ASSERT_TRUE(c) << c.error().message();
    EXPECT_TRUE(c->cut());
    EXPECT_EQ(c->frames(), make({{0xffffffff81000010, FrameContext::kKernel},
                                 {0x401000, FrameContext::kUser},
                                 {0x402000, FrameContext::kUser}})
                               .frames());
  }
  // A later context's marker starts a walk of its own: the guest's frames are kept.
  Ips guest = {PERF_CONTEXT_KERNEL, 0x1, uint64_t(-1), 0x2, PERF_CONTEXT_GUEST, PERF_CONTEXT_GUEST_KERNEL, 0x3};
  auto g = Callchain::from_perf_ips(guest);
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_TRUE(g->cut());
  EXPECT_EQ(g->frames(), make({{0x1, FrameContext::kKernel}, {0x3, FrameContext::kGuestKernel}}).frames());
  // Without one, a chain is whole.
  auto whole = Callchain::from_perf_ips(Ips{PERF_CONTEXT_KERNEL, 0x1, PERF_CONTEXT_USER, 0x2});
  ASSERT_TRUE(whole);
  EXPECT_FALSE(whole->cut());
}

TEST(CallchainFromPerfIps, WordThatIsNoMarkerBeforeAnyMarkerIsRejected) {
  Ips ips = {uint64_t(-1), PERF_CONTEXT_KERNEL, 0x1};
  auto c = Callchain::from_perf_ips(ips);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("entry 0"), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find("unknown context marker"), std::string::npos) << c.error().message();
}

TEST(CallchainFromPerfIps, HighestKernelAddressIsAnIpNotAMarker) {
  // One below PERF_CONTEXT_MAX is still an address.
  Ips ips = {PERF_CONTEXT_KERNEL, uint64_t(PERF_CONTEXT_MAX) - 1};
  auto c = Callchain::from_perf_ips(ips);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(*c, make({{uint64_t(PERF_CONTEXT_MAX) - 1, FrameContext::kKernel}}));
}

TEST(CallchainFromPerfIps, EmptyAndMarkersOnly) {
  auto empty = Callchain::from_perf_ips({});
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  Ips only_markers = {PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER};
  auto c = Callchain::from_perf_ips(only_markers);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->empty());
}

TEST(CallchainToPerfIps, MarkerAtEachContextChange) {
  Callchain c = make({{0x1, FrameContext::kKernel},
                      {0x2, FrameContext::kKernel},
                      {0x3, FrameContext::kUser},
                      {0x4, FrameContext::kKernel},  // back to kernel: a new marker
                      {0x5, FrameContext::kGuestUser}});
  Ips expected = {PERF_CONTEXT_KERNEL, 0x1, 0x2, PERF_CONTEXT_USER, 0x3,
                  PERF_CONTEXT_KERNEL, 0x4, PERF_CONTEXT_GUEST_USER, 0x5};
  EXPECT_EQ(c.to_perf_ips(), expected);
}

TEST(CallchainToPerfIps, FirstFrameAlwaysGetsAMarker) {
  // The initial "current" context must not suppress the first marker, whatever it is.
  for (FrameContext ctx : {FrameContext::kUser, FrameContext::kKernel, FrameContext::kHypervisor,
                           FrameContext::kGuestKernel, FrameContext::kGuestUser}) {
    Callchain c = make({{0x42, ctx}});
    EXPECT_EQ(c.to_perf_ips(), (Ips{context_marker(ctx), 0x42}));
  }
  EXPECT_TRUE(Callchain().to_perf_ips().empty());
}

TEST(CallchainToPerfIps, RoundTrips) {
  Callchain c = make({{0xffffffff81000000, FrameContext::kKernel},
                      {0x401000, FrameContext::kUser},
                      {0x10, FrameContext::kHypervisor},
                      {0x20, FrameContext::kGuestKernel},
                      {0x30, FrameContext::kGuestUser},
                      {0x40, FrameContext::kGuestUser}});
  auto back = Callchain::from_perf_ips(c.to_perf_ips());
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, c);
}

TEST(CallchainContextMarker, MapsEveryContext) {
  EXPECT_EQ(context_marker(FrameContext::kKernel), uint64_t(PERF_CONTEXT_KERNEL));
  EXPECT_EQ(context_marker(FrameContext::kUser), uint64_t(PERF_CONTEXT_USER));
  EXPECT_EQ(context_marker(FrameContext::kHypervisor), uint64_t(PERF_CONTEXT_HV));
  EXPECT_EQ(context_marker(FrameContext::kGuestKernel), uint64_t(PERF_CONTEXT_GUEST_KERNEL));
  EXPECT_EQ(context_marker(FrameContext::kGuestUser), uint64_t(PERF_CONTEXT_GUEST_USER));
}

TEST(CallchainFromStacks, StopsAtFirstZeroInEachHalf) {
  Ips kernel = {0xffffffff81000001, 0xffffffff81000002, 0, 0xffffffff81000003};
  Ips user = {0x401000, 0, 0x402000, 0};
  Callchain c = Callchain::from_stacks(kernel, user);
  EXPECT_EQ(c, make({{0xffffffff81000001, FrameContext::kKernel},
                     {0xffffffff81000002, FrameContext::kKernel},
                     {0x401000, FrameContext::kUser}}));
}

TEST(CallchainFromStacks, FullLengthHalvesAndEmptyHalves) {
  Ips kernel = {0xa, 0xb};
  Ips user = {0xc};
  EXPECT_EQ(Callchain::from_stacks(kernel, user),
            make({{0xa, FrameContext::kKernel}, {0xb, FrameContext::kKernel}, {0xc, FrameContext::kUser}}));
  EXPECT_EQ(Callchain::from_stacks({}, user), make({{0xc, FrameContext::kUser}}));
  Ips zero_first = {0, 0xa};
  EXPECT_EQ(Callchain::from_stacks(zero_first, user), make({{0xc, FrameContext::kUser}}));
  EXPECT_TRUE(Callchain::from_stacks({}, {}).empty());
}

// A user walk that left the frame chain stores what it read: a value perf takes for a context
// marker ends the half, so that the chain perf and our reader decode keeps the frames before.
TEST(CallchainFromStacks, MarkerRangeValuesEndAHalf) {
  Ips kernel = {0xffffffff81000000, uint64_t(PERF_CONTEXT_USER), 0xffffffff81000010};
  Ips user = {0x401000, 0xffffffffffffff00, 0x402000};
  Callchain c = Callchain::from_stacks(kernel, user);
  EXPECT_EQ(c.frames(), make({{0xffffffff81000000, FrameContext::kKernel}, {0x401000, FrameContext::kUser}}).frames());
  auto back = Callchain::from_perf_ips(c.to_perf_ips());
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->frames(), c.frames());
}

// A stack-map stack that went astray is cut as the same walk read from a perf callchain is, in
// either half; zeros are the map's padding after a walk that ended, and cut nothing.
TEST(CallchainFromStacks, CutLikeFromPerfIps) {
  const uint64_t astray = 0xffffffffffffff00;
  Ips kernel = {0xffffffff81000000, astray, 0xffffffff81000010};
  Ips user = {0x401000, astray, 0x402000};
  EXPECT_TRUE(Callchain::from_stacks(kernel, {}).cut());
  EXPECT_TRUE(Callchain::from_stacks({}, user).cut());
  Ips perf_ips = {PERF_CONTEXT_USER, 0x401000, astray, 0x402000};
  auto from_perf = Callchain::from_perf_ips(perf_ips);
  ASSERT_TRUE(from_perf) << from_perf.error().message();
  Callchain from_map = Callchain::from_stacks({}, user);
  EXPECT_EQ(from_map, *from_perf);  // frames and cut() alike

  Ips padded_kernel = {0xffffffff81000000, 0, 0}, padded_user = {0x401000, 0, 0};
  EXPECT_FALSE(Callchain::from_stacks(padded_kernel, padded_user).cut());
  EXPECT_FALSE(Callchain::from_stacks({}, {}).cut());
}

TEST(CallchainLeafCpumode, FollowsTheLeafFrame) {
  EXPECT_EQ(Callchain().leaf_cpumode(), PERF_RECORD_MISC_USER);
  EXPECT_EQ(make({{1, FrameContext::kKernel}, {2, FrameContext::kUser}}).leaf_cpumode(),
            PERF_RECORD_MISC_KERNEL);
  EXPECT_EQ(make({{1, FrameContext::kUser}, {2, FrameContext::kKernel}}).leaf_cpumode(),
            PERF_RECORD_MISC_USER);
  EXPECT_EQ(make({{1, FrameContext::kHypervisor}}).leaf_cpumode(), PERF_RECORD_MISC_HYPERVISOR);
  EXPECT_EQ(make({{1, FrameContext::kGuestKernel}}).leaf_cpumode(), PERF_RECORD_MISC_GUEST_KERNEL);
  EXPECT_EQ(make({{1, FrameContext::kGuestUser}}).leaf_cpumode(), PERF_RECORD_MISC_GUEST_USER);
}

TEST(CallchainCount, CountsFramesPerContext) {
  Callchain c = make({{1, FrameContext::kKernel},
                      {2, FrameContext::kKernel},
                      {3, FrameContext::kUser},
                      {4, FrameContext::kKernel},
                      {5, FrameContext::kGuestUser}});
  EXPECT_EQ(c.size(), 5u);
  EXPECT_EQ(c.count(FrameContext::kKernel), 3u);
  EXPECT_EQ(c.count(FrameContext::kUser), 1u);
  EXPECT_EQ(c.count(FrameContext::kGuestUser), 1u);
  EXPECT_EQ(c.count(FrameContext::kHypervisor), 0u);
  EXPECT_EQ(Callchain().count(FrameContext::kUser), 0u);
}

// The leaf frames both back ends drop (callchain/tracing_frames.h): the tracepoint's iterator,
// perf's tracepoint handler, the BPF trampoline and program; and nothing of the scheduler, the
// blocking code or the wakeup.
TEST(TracingFrames, EitherBackEndsTracingMachineryAndNothingElse) {
  for (const char* name : {"__traceiter_sched_switch", "perf_trace_sched_switch", "perf_tp_event",
                           "trace_event_buffer_reserve", "__bpf_trace_sched_switch", "bpf_trace_run4",
                           "bpf_prog_6deef7357e7b4530_offwake_switch"})
    EXPECT_TRUE(is_tracing_frame(name)) << name;
  for (const char* name : {"__schedule", "schedule", "anon_pipe_read", "try_to_wake_up", "futex_wait_queue",
                           "bpf_map_lookup_elem", "perf_event_output", ""})
    EXPECT_FALSE(is_tracing_frame(name)) << name;
}

}  // namespace
}  // namespace offwake
