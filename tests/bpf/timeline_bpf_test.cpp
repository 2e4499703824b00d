// Timeline mode: every block is one struct offwake_event sent through the BPF ring buffer.
// Checked against the workloads' own measurements and against aggregated mode. Root only.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bpf/aggregates.h"
#include "bpf/event_reader.h"
#include "bpf/offwake_loader.h"
#include "support/paths.h"
#include "support/tolerances.h"
#include "support/truth.h"
#include "workload.h"

namespace offwake::bpf {
namespace {

using test::kBlockedTimeTolerance;

// How long drain() waits for the events still on their way after detach(): 100 reads 10 ms
// apart. A program that was running at detach() submits within microseconds; a whole second
// allows for a virtual CPU that the host took away at that moment.
constexpr int kDrainTries = 100;
constexpr auto kDrainPause = std::chrono::milliseconds(10);

// An event is stamped at its wakeup, which may come up to this long before the block's
// recorded start: a wakeup while the thread was still on its way into the scheduler (the
// switch-out is stamped after it). Microseconds, unless the host takes the virtual CPU away
// in between; 1 ms is the bound.
constexpr uint64_t kWakeupBeforeStartNs = 1'000'000;

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t page_size() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

uint64_t duration(const offwake_event& e) { return e.end_ns - e.start_ns; }

struct Recorded {
  Truth truth;
  std::vector<offwake_event> events;
  std::vector<Aggregate> aggregates;
  offwake_counters counters{};
  uint64_t attach_ns = 0;  // before attach()
  uint64_t detach_ns = 0;  // after detach()
  std::optional<StackTraceMap> stacks;
};

// After detach(), a program already running on another CPU may still be about to submit;
// reads until what arrived matches what the programs counted as sent (or a second passes).
void drain(OffwakeBpf& bpf, Recorded* run) {
  for (int i = 0; i < kDrainTries; ++i) {
    auto n = bpf.consume_events([&](const offwake_event& e) -> Status {
      run->events.push_back(e);
      return ok_status();
    });
    ASSERT_TRUE(n.ok()) << n.error().message();
    auto c = bpf.read_counters();
    ASSERT_TRUE(c.ok()) << c.error().message();
    run->counters = c.value();
    if (run->counters.blocks == run->events.size()) return;
    std::this_thread::sleep_for(kDrainPause);
  }
}

// Runs `workload` under `opts`. With `trace_workload`, only the workload's process is
// traced; else the whole system. In timeline mode events are read while it runs if
// `read_while_running`, and in any case drained after detach().
void run_workload(const std::string& workload, const std::vector<std::string>& args, LoaderOptions opts,
                  Recorded* run, bool trace_workload = true, bool read_while_running = true) {
  HeldProcess proc(kWorkloads + workload, args);
  ASSERT_GT(proc.pid(), 0);
  if (trace_workload) opts.tgids = {static_cast<uint32_t>(proc.pid())};
  auto bpf = OffwakeBpf::load(opts);
  ASSERT_TRUE(bpf.ok()) << bpf.error().message();
  ASSERT_EQ(bpf->timeline(), opts.timeline);
  run->attach_ns = monotonic_ns();
  auto attached = bpf->attach();
  ASSERT_TRUE(attached.ok()) << attached.error().message();
  proc.release();
  if (opts.timeline && read_while_running) {
    auto collect = [&](const offwake_event& e) -> Status {
      run->events.push_back(e);
      return ok_status();
    };
    while (proc.running()) {
      auto n = bpf->poll_events(20, collect);
      ASSERT_TRUE(n.ok()) << n.error().message();
    }
  }
  int status = -1;
  std::string out = proc.finish(&status);
  bpf->detach();
  run->detach_ns = monotonic_ns();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << workload << " failed: " << out;
  if (auto truths = parse_truth(out); !truths.empty()) run->truth = truths.front();

  if (opts.timeline) {
    ASSERT_NO_FATAL_FAILURE(drain(*bpf, run));
  } else {
    auto c = bpf->read_counters();
    ASSERT_TRUE(c.ok()) << c.error().message();
    run->counters = c.value();
  }
  auto aggs = bpf->read_aggregates();
  ASSERT_TRUE(aggs.ok()) << aggs.error().message();
  run->aggregates = std::move(aggs).value();
  auto stacks = bpf->stack_trace_map();
  ASSERT_TRUE(stacks.ok()) << stacks.error().message();
  run->stacks.emplace(std::move(stacks).value());
}

std::string describe(const offwake_event& e) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "tid=%u comm=%s start=%llu end=%llu (%llu ns) cpu=%u waker=%u",
                e.key.tid, comm_string(e.key.comm).c_str(), (unsigned long long)e.start_ns,
                (unsigned long long)e.end_ns, (unsigned long long)duration(e), e.cpu, e.key.waker_tid);
  return buf;
}

LoaderOptions timeline_options() {
  LoaderOptions o;
  o.timeline = true;
  return o;
}

// (a) Each event is a real block: its times lie within the recording, per thread in order,
// and the blocks in the named function add up to what the workload measured.
TEST(OffwakeTimeline, CondvarEventsMatchTruthAndLieWithinTheRecording) {
  Recorded run;
  ASSERT_NO_FATAL_FAILURE(run_workload("wl_condvar", {"-n", "20", "-m", "20"}, timeline_options(), &run));
  const Truth& t = run.truth;
  ASSERT_GT(t.tid, 0u) << "no truth line";
  auto fn = function_range(kWorkloads + "wl_condvar", t.function);
  ASSERT_TRUE(fn);
  const int ncpus = libbpf_num_possible_cpus();

  uint64_t total = 0, count = 0, no_waker = 0, no_waker_ns = 0;
  std::map<uint32_t, uint64_t> last_end;  // per tid
  for (const offwake_event& e : run.events) {
    SCOPED_TRACE(describe(e));
    EXPECT_LT(e.start_ns, e.end_ns);
    // Stamped at the wakeup: within the block (or a hair before its start, for a wakeup that
    // came while the thread was still on its way into the scheduler).
    EXPECT_LE(e.stamp_ns, e.end_ns);
    EXPECT_GE(e.stamp_ns + kWakeupBeforeStartNs, e.start_ns);
    EXPECT_GE(e.start_ns, run.attach_ns);
    EXPECT_LE(e.end_ns, run.detach_ns);
    EXPECT_LT(e.cpu, static_cast<uint32_t>(ncpus));
    EXPECT_EQ(e.flags, 0u);  // no --sample-period: every block weighs its length
    EXPECT_GE(e.end_ns, last_end[e.key.tid]) << "out of order for its thread";
    last_end[e.key.tid] = e.end_ns;
    if (e.key.tid != t.tid) continue;
    if (!stack_hits(frames_of(*run.stacks, e.key.user_stack_id), *fn)) continue;
    total += duration(e);
    ++count;
    if (e.key.waker_flags & OFFWAKE_WAKER_NONE) {
      ++no_waker;
      no_waker_ns += duration(e);
    } else {
      EXPECT_EQ(e.key.waker_tid, t.waker_tid);
    }
  }
  double error = std::fabs(static_cast<double>(total) - static_cast<double>(t.blocked_ns)) /
                 static_cast<double>(t.blocked_ns);
  std::printf("[ timeline ] wl_condvar: truth %llu ns in %llu blocks, events %llu ns in %llu blocks, "
              "error %.3f%%; %zu events in all\n",
              (unsigned long long)t.blocked_ns, (unsigned long long)t.count, (unsigned long long)total,
              (unsigned long long)count, error * 100, run.events.size());
  EXPECT_LT(error, kBlockedTimeTolerance);
  // Exact: one event per block (as the kernel counts them: wl_blocks_so_far,
  // tests/workloads/wl_common.h).
  EXPECT_EQ(count, t.count);
  // Blocks without a waker (sched_waking not seen): as rarely as the truth allows, in number
  // and in time (max_missed_blocks, max_missed_ns: support/tolerances.h), and each counted.
  EXPECT_LE(no_waker, test::max_missed_blocks(t.count)) << "events without a waker";
  EXPECT_LE(no_waker_ns, test::max_missed_ns(t.blocked_ns, t.count)) << "ns of events without a waker";
  EXPECT_LE(no_waker, run.counters.missed_wakeups);

  // Sent instead of aggregated, and nothing lost.
  EXPECT_TRUE(run.aggregates.empty());
  EXPECT_EQ(run.counters.blocks, run.events.size());
  EXPECT_EQ(run.counters.ringbuf_drops, 0u);
  EXPECT_EQ(run.counters.ringbuf_drops_ns, 0u);
  EXPECT_EQ(run.counters.agg_map_full, 0u);
}

// Sum of blocked time per thread, keyed by role (the tids differ between two runs).
std::map<std::string, uint64_t> time_by_role(const Recorded& run) {
  std::map<std::string, uint64_t> by_tid;
  auto role = [&](uint32_t tid) {
    if (tid == run.truth.tid) return std::string("waiter");
    if (tid == run.truth.waker_tid) return std::string("signaller");
    return "other tid " + std::to_string(tid);
  };
  for (const auto& a : run.aggregates) by_tid[role(a.key.tid)] += a.value.total_ns;
  for (const auto& e : run.events) by_tid[role(e.key.tid)] += duration(e);
  return by_tid;
}

// (b) The same deterministic workload, once per mode: the same time per blocked thread.
TEST(OffwakeTimeline, AgreesWithAggregatedMode) {
  Recorded aggregated, timeline;
  ASSERT_NO_FATAL_FAILURE(run_workload("wl_condvar", {"-n", "20", "-m", "20"}, {}, &aggregated));
  ASSERT_NO_FATAL_FAILURE(run_workload("wl_condvar", {"-n", "20", "-m", "20"}, timeline_options(), &timeline));
  EXPECT_TRUE(aggregated.events.empty());
  EXPECT_FALSE(aggregated.aggregates.empty());
  auto a = time_by_role(aggregated), t = time_by_role(timeline);
  // Two runs of the workload block for different times on a busy machine (a few % apart), so
  // each run's time is taken relative to its own truth (the waiter's measured blocking), and
  // those ratios must agree within 5% (kBlockedTimeTolerance: each is held to that already).
  ASSERT_GT(aggregated.truth.blocked_ns, 0u);
  ASSERT_GT(timeline.truth.blocked_ns, 0u);
  for (const char* role : {"waiter", "signaller"}) {
    ASSERT_TRUE(a.count(role) && t.count(role)) << role << " missing";
    const double ra = static_cast<double>(a[role]) / static_cast<double>(aggregated.truth.blocked_ns);
    const double rt = static_cast<double>(t[role]) / static_cast<double>(timeline.truth.blocked_ns);
    double diff = std::fabs(ra - rt) / ra;
    std::printf("[ timeline ] %s: aggregated %llu ns, timeline %llu ns, difference %.3f%%\n", role,
                (unsigned long long)a[role], (unsigned long long)t[role], diff * 100);
    EXPECT_LT(diff, kBlockedTimeTolerance) << role;
  }
}

// (c) A one-page ring buffer that nobody reads during a busy system-wide recording fills
// up: the rest is counted as dropped, and what arrives is exactly what was sent.
TEST(OffwakeTimeline, FullRingBufferCountsDrops) {
  LoaderOptions opts = timeline_options();
  opts.ringbuf_bytes = static_cast<uint32_t>(page_size());
  Recorded run;
  ASSERT_NO_FATAL_FAILURE(run_workload("wl_pingpong", {"-n", "20000"}, opts, &run, /*trace_workload=*/false,
                                       /*read_while_running=*/false));
  const offwake_counters& c = run.counters;
  std::printf("[ timeline ] one-page ring buffer: %zu events received, blocks sent %llu, "
              "dropped %llu (%llu ns)\n",
              run.events.size(), (unsigned long long)c.blocks, (unsigned long long)c.ringbuf_drops,
              (unsigned long long)c.ringbuf_drops_ns);
  EXPECT_GT(run.events.size(), 0u);
  EXPECT_EQ(run.events.size(), c.blocks);
  // 8 bytes of ring-buffer header per record; without --chain-depth an event stops before its
  // key's chain.
  EXPECT_LE(run.events.size() * (OFFWAKE_EVENT_BASE_SIZE + 8), page_size());
  // 20000 handoffs block a thread each, but for the few that find their wakeup already
  // there: far more blocks than the ~34 that fit. 1000 is a floor an order of magnitude
  // below that, however the scheduler interleaves the two threads.
  EXPECT_GT(c.ringbuf_drops, 1000u);
  EXPECT_GT(c.ringbuf_drops_ns, 0u);
  EXPECT_TRUE(run.aggregates.empty());
}

// (d) --min-block/--max-block are applied in the kernel, to events as to buckets.
TEST(OffwakeTimeline, MinAndMaxBlockFilterEvents) {
  // Ten ~10 ms sleeps; the bounds, 5 ms and 50 ms, are far from them on either side (a sleep
  // never ends early, and oversleeps here by far less than 40 ms).
  const std::vector<std::string> args{"-n", "10", "-m", "10"};
  struct Case {
    uint64_t min_ns, max_ns;
    bool sleeps_kept;
  } cases[] = {
      {5'000'000, 50'000'000, true},
      {50'000'000, 0, false},
      {0, 5'000'000, false},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE("min " + std::to_string(k.min_ns) + " max " + std::to_string(k.max_ns));
    LoaderOptions opts = timeline_options();
    opts.min_block_ns = k.min_ns;
    opts.max_block_ns = k.max_ns;
    Recorded run;
    ASSERT_NO_FATAL_FAILURE(run_workload("wl_sleep", args, opts, &run));
    auto fn = function_range(kWorkloads + "wl_sleep", run.truth.function);
    ASSERT_TRUE(fn);
    uint64_t sleeps = 0;
    for (const auto& e : run.events) {
      EXPECT_GE(duration(e), k.min_ns) << describe(e);
      if (k.max_ns) {
        EXPECT_LE(duration(e), k.max_ns) << describe(e);
      }
      if (e.key.tid == run.truth.tid &&
          stack_hits(frames_of(*run.stacks, e.key.user_stack_id), *fn))
        ++sleeps;
    }
    EXPECT_EQ(run.counters.blocks, run.events.size());
    if (k.sleeps_kept) {
      EXPECT_EQ(sleeps, run.truth.count);  // a sleep is one block: nothing to be one off
    } else {
      EXPECT_EQ(sleeps, 0u);
      EXPECT_GE(run.counters.filtered, run.truth.count);
    }
  }
}

// An error from the callback stops the reading and comes back; the next read goes on
// after the event that failed.
TEST(OffwakeTimeline, CallbackErrorStopsReading) {
  HeldProcess proc(kWorkloads + "wl_sleep", {"-n", "10", "-m", "2"});
  LoaderOptions opts = timeline_options();
  opts.tgids = {static_cast<uint32_t>(proc.pid())};
  auto bpf = OffwakeBpf::load(opts);
  ASSERT_TRUE(bpf.ok()) << bpf.error().message();
  ASSERT_TRUE(bpf->attach().ok());
  proc.release();
  int status;
  proc.finish(&status);
  bpf->detach();

  size_t calls = 0;
  auto failed = bpf->consume_events([&](const offwake_event&) -> Status {
    if (++calls == 3) return Error("stop here", ENOSPC);
    return ok_status();
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().what(), "stop here");
  EXPECT_EQ(failed.error().errnum(), ENOSPC);
  EXPECT_EQ(calls, 3u);

  size_t rest = 0;
  auto n = bpf->consume_events([&](const offwake_event&) -> Status {
    ++rest;
    return ok_status();
  });
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(*n, rest);
  auto c = bpf->read_counters();
  ASSERT_TRUE(c.ok());
  EXPECT_GE(c->blocks, 10u);
  EXPECT_EQ(calls + rest, c->blocks);
}

// Aggregated mode keeps a one-page ring buffer it never writes, and has no events to read.
TEST(OffwakeTimeline, AggregatedModeHasNoEvents) {
  auto bpf = OffwakeBpf::load({});
  ASSERT_TRUE(bpf.ok()) << bpf.error().message();
  EXPECT_FALSE(bpf->timeline());
  EXPECT_EQ(bpf->events_fd(), -1);
  auto n = bpf->poll_events(0, [](const offwake_event&) { return ok_status(); });
  EXPECT_FALSE(n.ok());
  bpf_map_info info{};
  __u32 len = sizeof(info);
  ASSERT_EQ(bpf_obj_get_info_by_fd(bpf->events_map_fd(), &info, &len), 0);
  EXPECT_EQ(info.type, BPF_MAP_TYPE_RINGBUF);
  EXPECT_EQ(info.max_entries, page_size());

  auto timeline = OffwakeBpf::load(timeline_options());
  ASSERT_TRUE(timeline.ok()) << timeline.error().message();
  EXPECT_GE(timeline->events_fd(), 0);
  info = {};
  len = sizeof(info);
  ASSERT_EQ(bpf_obj_get_info_by_fd(timeline->events_map_fd(), &info, &len), 0);
  EXPECT_EQ(info.max_entries, LoaderOptions{}.ringbuf_bytes);
}

TEST(OffwakeTimeline, BadRingBufferSizesAreRejected) {
  for (uint64_t bytes : {uint64_t{0}, uint64_t{100}, page_size() / 2, 3 * page_size()}) {
    LoaderOptions opts = timeline_options();
    opts.ringbuf_bytes = static_cast<uint32_t>(bytes);
    auto bpf = OffwakeBpf::load(opts);
    EXPECT_FALSE(bpf.ok()) << bytes;
    if (!bpf.ok()) {
      EXPECT_EQ(bpf.error().errnum(), EINVAL);
    }
  }
}

// The record check itself, without the kernel: a record of the wrong size is an error.
TEST(OffwakeTimelineDecode, RecordOfTheWrongSizeIsAnError) {
  offwake_event e{};
  e.key.tid = 42;
  e.start_ns = 1;
  e.end_ns = 2;
  unsigned char buf[sizeof(offwake_event) + 8] = {};
  std::memcpy(buf, &e, sizeof(e));
  int calls = 0;
  EventCallback cb = [&](const offwake_event& got) -> Status {
    ++calls;
    EXPECT_EQ(got.key.tid, 42u);
    EXPECT_EQ(got.end_ns, 2u);
    return ok_status();
  };
  EXPECT_TRUE(deliver_event(buf, sizeof(offwake_event), cb).ok());
  EXPECT_EQ(calls, 1);
  for (size_t size : {size_t{0}, sizeof(offwake_event) - 1, sizeof(offwake_event) + 8}) {
    Status s = deliver_event(buf, size, cb);
    EXPECT_FALSE(s.ok()) << size;
  }
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace offwake::bpf
