// SampleStream's order: perf's rule for FINISHED_ROUND records (at each round, what is not
// newer than the previous round's newest record is handed on) gives the order of a full sort
// of the file whenever the file keeps that rule, holding only about two rounds of records;
// a file or stream without rounds is sorted whole; a record that breaks the rule is still
// handed on, and counted. Recordings written to memory, file and pipe mode. No privileges.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "perfdata/fixtures.h"
#include "perfdata/reader.h"
#include "samples/offwake_events.h"
#include "report/sample_stream.h"
#include "symbolize/symbolizer.h"

namespace offwake::report {
namespace {

using perfdata::Bytes;
using perfdata::Mode;
using perfdata::Record;

const OffwakeEventIds kIds{1000, 1001};

// What the stream hands on, in order: the blocked sample's tid for offwake(), the waker
// sample's tid (negated) for sample(), and a COMM record's tid + 1,000,000 for observed().
struct Order : SampleVisitor {
  std::vector<int64_t> seen;
  Status offwake(const perfdata::EventDesc&, const perfdata::SampleRecord& s, const OffwakeGroup& g) override {
    seen.push_back(s.tid);
    EXPECT_TRUE(g.waker && g.waker->tid == s.tid) << "block " << s.tid << " lost its waker sample";
    return ok_status();
  }
  Status sample(const perfdata::EventDesc&, const perfdata::SampleRecord& s) override {
    seen.push_back(-int64_t{s.tid});
    return ok_status();
  }
  void observed(const Record& r) override {
    if (const auto* c = std::get_if<perfdata::CommRecord>(&r)) seen.push_back(1'000'000 + c->tid);
  }
};

// One item of a recording: a block (its offwake-time and offwake-waker samples, both of
// thread `tid` at `time`), a COMM record, or a round's end.
struct Item {
  enum { kBlock, kComm, kRound } kind;
  uint32_t tid = 0;
  uint64_t time = 0;
};

std::vector<Record> records_of(const std::vector<Item>& items) {
  std::vector<Record> out;
  for (const Item& it : items) {
    if (it.kind == Item::kRound) {
      out.push_back(perfdata::FinishedRoundRecord{});
    } else if (it.kind == Item::kComm) {
      perfdata::CommRecord c;
      c.pid = c.tid = it.tid;
      c.comm = "t" + std::to_string(it.tid);
      c.sample_id = {it.tid, it.tid, it.time, 0, 0, 0};
      out.push_back(c);
    } else {
      for (uint64_t id : {kIds.time, kIds.waker}) {
        perfdata::SampleRecord s;
        s.id = id;
        s.pid = s.tid = it.tid;
        s.time = it.time;
        s.period = 1000;
        if (id == kIds.time) {
          OffwakeRaw raw;
          raw.count = 1;
          s.raw = encode_offwake_raw(raw);
        }
        out.push_back(s);
      }
    }
  }
  return out;
}

// The order of a full sort of every record by time (ties in file order), as Order sees it.
std::vector<int64_t> fully_sorted(std::vector<Item> items) {
  std::erase_if(items, [](const Item& i) { return i.kind == Item::kRound; });
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.time < b.time; });
  std::vector<int64_t> out;
  for (const Item& i : items) {
    if (i.kind == Item::kComm) {
      out.push_back(1'000'000 + i.tid);
    } else {
      out.push_back(i.tid);
      out.push_back(-int64_t{i.tid});
    }
  }
  return out;
}

// Sorted within each round only (what a reader that never reorders across a round gives).
std::vector<int64_t> sorted_by_round(const std::vector<Item>& items) {
  std::vector<int64_t> out;
  std::vector<Item> round;
  auto flush = [&] {
    auto part = fully_sorted(round);
    out.insert(out.end(), part.begin(), part.end());
    round.clear();
  };
  for (const Item& i : items) {
    if (i.kind == Item::kRound) flush();
    else round.push_back(i);
  }
  flush();
  return out;
}

struct Streamed {
  std::vector<int64_t> order;
  SampleStream::Stats stats;
};

Streamed stream(Mode mode, const std::vector<Item>& items) {
  Bytes bytes = perfdata::test::write_to_memory(mode, offwake_events(kIds), records_of(items));
  auto reader = perfdata::PerfDataReader::from_memory(std::move(bytes));
  EXPECT_TRUE(reader) << reader.error().message();
  if (!reader) return {};
  EXPECT_EQ(reader->mode(), mode);
  symbolize::Symbolizer symbolizer;
  SampleStream s(*reader, symbolizer);
  Order order;
  Status st = s.run(order);
  EXPECT_TRUE(st) << st.error().message();
  return {order.seen, s.stats()};
}

// Whether every record after round k's end is at least as new as the newest record before
// round k-1's end: what perf's reader needs to hand on records in time order.
bool keeps_perfs_rule(const std::vector<Item>& items) {
  uint64_t newest = 0, before_last_round = 0, before_round_ago = 0;
  for (const Item& i : items) {
    if (i.kind == Item::kRound) {
      before_round_ago = before_last_round;
      before_last_round = newest;
      continue;
    }
    if (i.time < before_round_ago) return false;
    newest = std::max(newest, i.time);
  }
  return true;
}

const Mode kModes[] = {Mode::kFile, Mode::kPipe};
const char* name(Mode m) { return m == Mode::kFile ? "file" : "pipe"; }

// A record may come a round late (older than the newest of the round before it), as a CPU's
// buffer read late does: the stream still gives the full sort's order, where sorting each
// round alone would not.
TEST(SampleStreamRounds, RecordsOlderThanThePreviousRoundComeInTimeOrder) {
  const std::vector<Item> items = {
      {Item::kComm, 1, 50},   {Item::kBlock, 1, 100}, {Item::kBlock, 2, 300}, {Item::kRound},
      {Item::kBlock, 3, 200}, {Item::kBlock, 4, 500}, {Item::kComm, 5, 250},  {Item::kBlock, 5, 260},
      {Item::kRound},         {Item::kBlock, 6, 400}, {Item::kBlock, 7, 600}, {Item::kRound},
      {Item::kBlock, 8, 550}, {Item::kBlock, 9, 700},
  };
  ASSERT_TRUE(keeps_perfs_rule(items));
  ASSERT_NE(sorted_by_round(items), fully_sorted(items)) << "the input must be out of order across rounds";
  for (Mode m : kModes) {
    Streamed s = stream(m, items);
    EXPECT_EQ(s.order, fully_sorted(items)) << name(m);
    EXPECT_EQ(s.stats.rounds, 3u) << name(m);
    EXPECT_EQ(s.stats.out_of_order, 0u) << name(m);
  }
}

// Many rounds of records that arrive up to a round late, shuffled: the same order as the full
// sort, and never more than about two rounds of records held at once.
TEST(SampleStreamRounds, ManyLateRoundsGiveTheFullSortHoldingTwoRounds) {
  std::mt19937_64 rng(21);
  constexpr size_t kBlocks = 20000, kPerRound = 100;
  // Block i happens at 10 * i and is written in the order of 10 * i plus a delay of up to half
  // a round (kPerRound blocks): so it can be written after blocks of the next round.
  std::vector<std::pair<uint64_t, uint32_t>> written;
  for (uint32_t i = 1; i <= kBlocks; ++i) written.emplace_back(10 * i + rng() % (5 * kPerRound), i);
  std::sort(written.begin(), written.end());
  std::vector<Item> items;
  for (size_t k = 0; k < written.size(); ++k) {
    const uint32_t i = written[k].second;
    if (i % 97 == 0) items.push_back({Item::kComm, i, 10 * uint64_t{i} - 1});
    items.push_back({Item::kBlock, i, 10 * uint64_t{i}});
    if ((k + 1) % kPerRound == 0) items.push_back({Item::kRound});
  }
  ASSERT_TRUE(keeps_perfs_rule(items));
  ASSERT_NE(sorted_by_round(items), fully_sorted(items));
  for (Mode m : kModes) {
    Streamed s = stream(m, items);
    EXPECT_EQ(s.order, fully_sorted(items)) << name(m);
    EXPECT_EQ(s.stats.rounds, kBlocks / kPerRound) << name(m);
    EXPECT_EQ(s.stats.out_of_order, 0u) << name(m);
    // Two samples a block, and a COMM record now and then: about three rounds' worth at most.
    EXPECT_LE(s.stats.most_waiting, 3 * 2 * kPerRound + 20) << name(m);
    EXPECT_GT(s.stats.most_waiting, 2 * kPerRound) << name(m) << ": a round late is held a round longer";
  }
}

// No rounds: the whole recording is sorted.
TEST(SampleStreamRounds, WithoutRoundsTheWholeRecordingIsSorted) {
  std::mt19937_64 rng(6);
  std::vector<Item> items;
  for (uint32_t i = 1; i <= 3000; ++i) items.push_back({Item::kBlock, i, 1 + rng() % 1'000'000'000});
  for (uint32_t i = 1; i <= 50; ++i) items.push_back({Item::kComm, 5000 + i, rng() % 1'000'000'000});
  std::shuffle(items.begin(), items.end(), rng);
  for (Mode m : kModes) {
    Streamed s = stream(m, items);
    EXPECT_EQ(s.order, fully_sorted(items)) << name(m);
    EXPECT_EQ(s.stats.rounds, 0u) << name(m);
    EXPECT_EQ(s.stats.most_waiting, 2 * 3000u + 50) << name(m);
  }
}

// A record older than what a round already handed on (a writer that broke the rule) is not
// dropped: it comes at the next round, out of order, and is counted.
TEST(SampleStreamRounds, ARecordOlderThanWhatWasHandedOnIsCountedNotLost) {
  const std::vector<Item> items = {
      {Item::kBlock, 1, 100}, {Item::kBlock, 2, 300}, {Item::kRound}, {Item::kBlock, 3, 400}, {Item::kRound},
      {Item::kBlock, 4, 50},  {Item::kBlock, 5, 500}, {Item::kRound},
  };
  ASSERT_FALSE(keeps_perfs_rule(items));
  for (Mode m : kModes) {
    Streamed s = stream(m, items);
    EXPECT_EQ(s.order, (std::vector<int64_t>{1, -1, 2, -2, 4, -4, 3, -3, 5, -5})) << name(m);
    EXPECT_EQ(s.stats.out_of_order, 2u) << name(m) << ": block 4's two samples";
  }
}

}  // namespace
}  // namespace offwake::report
