// TimeOrder: per-CPU ring buffers, each in its own order, merged into one time order by
// perf's round rule; FileRounds: a file's records by its FINISHED_ROUND records. No
// privileges needed.
#include "perfdata/time_order_queue.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace offwake::perfdata {
namespace {

std::vector<int> released(TimeOrder<int>& q, uint64_t pass_start, bool all = false) {
  std::vector<int> out;
  auto fn = [&](uint64_t, int v) { out.push_back(v); };
  if (all) q.flush(fn);
  else q.end_pass(pass_start, fn);
  return out;
}

TEST(TimeOrder, ReleasesUpToTheOldestLatestTimeOfTheBuffersWithData) {
  TimeOrder<int> q(3);
  q.push(0, 10, 10);
  q.push(0, 40, 40);
  q.push(1, 20, 20);
  q.push(1, 30, 30);
  // Buffer 2 was empty; buffer 1 may still hold records after 30, buffer 0 after 40.
  EXPECT_EQ(released(q, 100), (std::vector<int>{10, 20, 30}));
  EXPECT_EQ(q.pending(), 1u);
  // Next pass: buffer 1 gives 35, which must come before 40.
  q.push(1, 35, 35);
  q.push(2, 50, 50);
  EXPECT_EQ(released(q, 100), (std::vector<int>{35}));
  EXPECT_EQ(released(q, 0, true), (std::vector<int>{40, 50}));
  EXPECT_EQ(q.late(), 0u);
}

TEST(TimeOrder, EmptyPassReleasesUpToThePassStart) {
  TimeOrder<int> q(2);
  q.push(0, 10, 10);
  q.push(1, 5, 5);
  EXPECT_EQ(released(q, 100), (std::vector<int>{5}));
  // No buffer had data: everything before the pass's start is safe.
  EXPECT_EQ(released(q, 100), (std::vector<int>{10}));
  q.push_other(150, 150);  // e.g. a fork from the tracking events, after the pass start
  EXPECT_EQ(released(q, 120), (std::vector<int>{}));
  EXPECT_EQ(released(q, 200), (std::vector<int>{150}));
}

TEST(TimeOrder, TiesKeepArrivalOrderAndOtherRecordsInterleave) {
  TimeOrder<int> q(2);
  q.push(0, 10, 1);
  q.push(0, 10, 2);
  q.push_other(5, 0);
  q.push(1, 10, 3);
  EXPECT_EQ(released(q, 100), (std::vector<int>{0, 1, 2, 3}));
}

TEST(TimeOrder, ARecordOlderThanOneReleasedIsCountedLate) {
  TimeOrder<int> q(1);
  q.push(0, 10, 10);
  EXPECT_EQ(released(q, 100), (std::vector<int>{10}));
  q.push(0, 8, 8);
  EXPECT_EQ(q.late(), 1u);
  EXPECT_EQ(released(q, 100), (std::vector<int>{8}));
}

TEST(TimeOrder, MovesItemsWithoutCopies) {
  TimeOrder<std::unique_ptr<int>> q(1);
  q.push(0, 2, std::make_unique<int>(2));
  q.push(0, 1, std::make_unique<int>(1));
  std::vector<int> out;
  q.flush([&](uint64_t, std::unique_ptr<int> p) { out.push_back(*p); });
  EXPECT_EQ(out, (std::vector<int>{1, 2}));
}


// A file's rounds: a record read one round late still comes out in time order; what is left
// comes out at the end; ties keep input order.
std::vector<uint64_t> round_of(FileRounds<uint64_t>& r, bool rest = false) {
  std::vector<uint64_t> out;
  auto fn = [&](uint64_t time, uint64_t) { out.push_back(time); };
  if (rest) r.rest(fn);
  else r.round(fn);
  return out;
}

TEST(FileRounds, HandsOnUpToThePreviousRoundsNewest) {
  FileRounds<uint64_t> o;
  o.add(10, 0);
  o.add(30, 1);
  EXPECT_TRUE(round_of(o).empty());  // nothing before the first round
  o.add(20, 2);                      // read a round late: older than 30
  o.add(50, 3);
  EXPECT_EQ(round_of(o), (std::vector<uint64_t>{10, 20, 30}));
  o.add(40, 4);
  EXPECT_EQ(round_of(o), (std::vector<uint64_t>{40, 50}));
  o.add(60, 5);
  EXPECT_EQ(round_of(o, true), (std::vector<uint64_t>{60}));
  EXPECT_EQ(o.late(), 0u);
  o.add(5, 6);  // older than what was handed on
  EXPECT_EQ(o.late(), 1u);
}

TEST(FileRounds, TiesKeepInputOrder) {
  FileRounds<uint64_t> o;
  o.add(5, 0);
  o.add(5, 1);
  o.add(1, 2);
  std::vector<uint64_t> seq;
  o.rest([&](uint64_t, uint64_t s) { seq.push_back(s); });
  EXPECT_EQ(seq, (std::vector<uint64_t>{2, 0, 1}));
}

}  // namespace
}  // namespace offwake::perfdata
