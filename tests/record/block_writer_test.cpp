// The one path from blocks to a recording's samples and statistics, which perf offwake record
// and perf offwake convert share (BlockWriter): each aggregate or timeline block becomes its
// samples, written after the records that name their threads, counted in RecordStats; at the
// end the blocks lost are a LOST_SAMPLES record and the stats a feature section.
#include "samples/block_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "../perfdata/fixtures.h"
#include "perfdata/reader.h"
#include "perfdata/sink.h"
#include "support/stack_table.h"

namespace offwake {
namespace {

Aggregate aggregate(uint32_t tid, uint64_t total_ns) {
  Aggregate a{};
  std::memset(&a.key, 0, sizeof a.key);
  a.key.tgid = a.key.tid = tid;
  a.key.kern_stack_id = 1;
  a.key.user_stack_id = kNoStack;
  a.key.waker_tgid = a.key.waker_tid = 200;
  a.key.waker_kern_stack_id = 1;
  a.key.waker_user_stack_id = kNoStack;
  a.value.total_ns = total_ns;
  a.value.count = 1;
  return a;
}

const OffwakeEventIds kIds{1000, 1001};

// The stacks of aggregate(): one kernel stack, id 1.
test::StackTable one_kernel_stack() {
  test::StackTable table;
  table.stacks[1] = {0xffffffff81000200};
  return table;
}

// A perf.data file of kIds's events, in memory.
auto memory_writer() {
  return perfdata::PerfDataWriter::create(std::make_unique<perfdata::MemorySink>(), perfdata::Mode::kFile,
                                          offwake_events(kIds), perfdata::test::fixed_host());
}

// What a writer of memory_writer() holds once closed.
perfdata::Bytes written(const perfdata::PerfDataWriter& w) {
  return static_cast<const perfdata::MemorySink&>(w.sink()).data();
}

TEST(BlockWriter, WritesSamplesCountsThemAndEndsWithLossesAndStats) {
  const test::StackTable table = one_kernel_stack();
  const OffwakeEventIds ids = kIds;
  auto w = memory_writer();
  ASSERT_TRUE(w) << w.error().message();
  RecordStats stats;
  stats.counters.agg_map_full = 3;  // blocks lost: one LOST_SAMPLES record of offwake-time
  stats.user_unwind.stacks = 5;      // --call-graph dwarf: stored with the rest
  stats.user_unwind.complete = 4;
  stats.user_unwind.copy_too_small = 1;
  std::vector<size_t> described;
  {
    BlockWriter blocks(*w, table, ids, nullptr, stats, [&](const std::vector<perfdata::SampleRecord>& s) {
      described.push_back(s.size());
      return ok_status();
    });
    const std::vector<Aggregate> batch{aggregate(10, 1000), aggregate(11, 2000)};
    ASSERT_TRUE(blocks.write(batch, 77));
    offwake_event e{};
    e.start_ns = 50;
    e.end_ns = 600;
    e.stamp_ns = 60;
    e.key = aggregate(12, 550).key;
    ASSERT_TRUE(blocks.write(e));
    ASSERT_TRUE(blocks.finish(99));
  }
  EXPECT_EQ(described, (std::vector<size_t>{2, 2, 2}));
  EXPECT_EQ(stats.keys, 2u);
  EXPECT_EQ(stats.timeline_events, 1u);
  EXPECT_EQ(stats.offwake_samples, 6u);
  EXPECT_EQ(stats.blocked_ns, 3550u);
  EXPECT_EQ(stats.sample_stacks, 6u);  // a kernel stack each, blocked and waker; no user stacks
  ASSERT_TRUE(w->close());

  auto r = perfdata::test::read_all(written(*w));
  ASSERT_TRUE(r) << r.error().message();
  size_t samples = 0;
  uint64_t lost = 0, lost_time = 0;
  for (const perfdata::Record& rec : r->records) {
    if (std::holds_alternative<perfdata::SampleRecord>(rec)) ++samples;
    if (const auto* l = std::get_if<perfdata::LostSamplesRecord>(&rec)) {
      lost += l->lost;
      lost_time = l->sample_id.time;
    }
  }
  EXPECT_EQ(samples, 6u);
  EXPECT_EQ(lost, 3u);
  EXPECT_EQ(lost_time, 99u);
  ASSERT_TRUE(r->info.other_sections.count(kFeatOffwakeStats));
  auto fields = decode_record_stats(r->info.other_sections.at(kFeatOffwakeStats));
  ASSERT_TRUE(fields);
  std::map<std::string, uint64_t> stored(fields->begin(), fields->end());
  EXPECT_EQ(stored["aggregates"], 2u);
  EXPECT_EQ(stored["dwarf_user_stacks"], 5u);
  EXPECT_EQ(stored["dwarf_user_stacks_complete"], 4u);
  EXPECT_EQ(stored["dwarf_user_stacks_copy_too_small"], 1u);
}

// perf queues a file's records in a time-ordered list searched from the record queued last:
// aggregates in hash order cost it a walk of the queue each, minutes for 100,000 of them. A
// batch is written in time order (its last_ns, or the fallback time without one), each
// waker sample right after its blocked sample.
TEST(BlockWriter, WritesABatchInTimeOrder) {
  const test::StackTable table = one_kernel_stack();
  const OffwakeEventIds ids = kIds;
  auto w = memory_writer();
  ASSERT_TRUE(w) << w.error().message();
  RecordStats stats;
  const uint64_t times[] = {500, 0, 100, 900, 300, 100};  // 0: no time of its own
  const uint64_t fallback = 700;
  std::vector<Aggregate> batch;
  for (size_t i = 0; i < std::size(times); ++i) {
    batch.push_back(aggregate(static_cast<uint32_t>(10 + i), 1000 + i));
    batch.back().value.last_ns = times[i];
  }
  {
    BlockWriter blocks(*w, table, ids, nullptr, stats);
    ASSERT_TRUE(blocks.write(batch, fallback));
    ASSERT_TRUE(blocks.finish(fallback));
  }
  EXPECT_EQ(stats.keys, std::size(times));
  ASSERT_TRUE(w->close());

  auto r = perfdata::test::read_all(written(*w));
  ASSERT_TRUE(r) << r.error().message();
  std::vector<const perfdata::SampleRecord*> samples;  // in file order
  for (const perfdata::Record& rec : r->records)
    if (const auto* s = std::get_if<perfdata::SampleRecord>(&rec)) samples.push_back(s);
  // Equal times keep the batch's order (tids 12 then 15, both at 100).
  const std::vector<std::pair<uint64_t, uint32_t>> want{{100, 12}, {100, 15}, {300, 14}, {500, 10}, {700, 11}, {900, 13}};
  ASSERT_EQ(samples.size(), 2 * want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const perfdata::SampleRecord& blocked = *samples[2 * i];
    const perfdata::SampleRecord& waker = *samples[2 * i + 1];
    EXPECT_EQ(blocked.id, ids.time) << i;
    EXPECT_EQ(std::make_pair(blocked.time, blocked.tid), want[i]) << i;
    EXPECT_EQ(waker.id, ids.waker) << i;
    EXPECT_EQ(waker.time, want[i].first) << i;
  }
}

// A waker whose PERF_RECORD_EXIT came just before the wakeup (on its way out): the group is
// stamped a nanosecond before that exit. An exit of the same tid long before (another thread
// that had it) moves nothing, nor one after the wakeup.
TEST(BlockWriter, AWakerOnItsWayOutStampsTheGroupBeforeItsExit) {
  const test::StackTable table = one_kernel_stack();
  auto w = memory_writer();
  ASSERT_TRUE(w) << w.error().message();
  RecordStats stats;
  const uint64_t wake = 1'000'000'000;
  struct Case {
    uint64_t exit, stamped;
  } cases[] = {{wake - 5'000, wake - 5'001}, {wake - 50'000'000, wake}, {wake + 1, wake}, {0, wake}};
  for (const Case& c : cases) {
    stats = RecordStats{};
    {
      BlockWriter blocks(*w, table, kIds, nullptr, stats, {}, [&](uint32_t tid) -> std::optional<uint64_t> {
        if (tid == 200 && c.exit) return c.exit;  // aggregate()'s waker
        return std::nullopt;
      });
      Aggregate a = aggregate(10, 1000);
      a.value.last_ns = wake;
      ASSERT_TRUE(blocks.write(std::vector<Aggregate>{a}, 1));
    }
  }
  ASSERT_TRUE(w->close());
  auto r = perfdata::test::read_all(written(*w));
  ASSERT_TRUE(r) << r.error().message();
  std::vector<uint64_t> times;
  for (const perfdata::Record& rec : r->records)
    if (const auto* s = std::get_if<perfdata::SampleRecord>(&rec)) times.push_back(s->time);
  ASSERT_EQ(times.size(), 2 * std::size(cases));
  for (size_t i = 0; i < std::size(cases); ++i) {
    EXPECT_EQ(times[2 * i], cases[i].stamped) << i;  // the blocked sample
    EXPECT_EQ(times[2 * i + 1], cases[i].stamped) << i;  // its waker's
  }
}

TEST(BlockWriter, PseudoWakersAreNamedByTid) {
  for (const PseudoWaker& p : kPseudoWakers) {
    const PseudoWaker* found = pseudo_waker_of_tid(p.tid);
    ASSERT_NE(found, nullptr) << p.comm;
    EXPECT_STREQ(found->comm, p.comm);
  }
  EXPECT_EQ(pseudo_waker_of_tid(1234), nullptr);
}

}  // namespace
}  // namespace offwake
