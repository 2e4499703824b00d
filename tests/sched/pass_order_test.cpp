// PassOrder: the live ring buffers merged into one time order, pass by pass, with one pass of
// margin for a buffer that gave nothing.
#include "sched/pass_order.h"

#include <gtest/gtest.h>

#include <vector>

namespace offwake::sched {
namespace {

std::vector<int> end_pass(PassOrder<int>& q) {
  std::vector<int> out;
  q.end_pass([&](uint64_t, int v) { out.push_back(v); });
  return out;
}

// CPU 1 stamped a record at 95, while the reader's pass began at 100, and committed it only
// after the reader found CPU 1's buffer empty; CPU 0's buffer gave 90 and 99 in that pass. The
// record comes in the next pass, and must still be released in its place, between 90 and 99.
TEST(PassOrder, ARecordCommittedAfterItsEmptyBufferWasReadStaysInOrder) {
  PassOrder<int> q(2);
  q.begin_pass(100);
  q.push(0, 90, 90);
  q.push(0, 99, 99);
  EXPECT_EQ(end_pass(q), (std::vector<int>{}));  // the empty buffer holds all back a pass
  q.begin_pass(200);
  q.push(0, 150, 150);
  q.push(1, 95, 95);
  EXPECT_EQ(end_pass(q), (std::vector<int>{90, 95}));  // up to CPU 1's latest
  q.begin_pass(300);
  q.push(1, 250, 250);
  EXPECT_EQ(end_pass(q), (std::vector<int>{99, 150}));  // CPU 0 empty: up to the previous start
  EXPECT_EQ(q.late(), 0u);
  std::vector<int> rest;
  q.flush([&](uint64_t, int v) { rest.push_back(v); });
  EXPECT_EQ(rest, (std::vector<int>{250}));
}

// A record that takes longer than a whole pass to commit still comes late, and is counted.
TEST(PassOrder, ARecordLateByMoreThanAPassIsCounted) {
  PassOrder<int> q(1);
  q.begin_pass(100);
  end_pass(q);
  q.begin_pass(200);
  q.push(0, 190, 190);
  end_pass(q);  // up to 100: nothing yet
  q.begin_pass(300);
  end_pass(q);  // up to 200
  q.push(0, 150, 150);
  q.begin_pass(400);
  end_pass(q);
  EXPECT_EQ(q.late(), 1u);
}

// Records from elsewhere (forks, exits) are ordered with the rest and hold nothing back.
TEST(PassOrder, OtherRecordsInterleave) {
  PassOrder<int> q(1);
  q.begin_pass(100);
  q.push(0, 50, 50);
  q.push_other(60, 60);
  q.push_other(40, 40);
  end_pass(q);
  q.begin_pass(200);
  q.push(0, 120, 120);
  EXPECT_EQ(end_pass(q), (std::vector<int>{40, 50, 60}));
}

}  // namespace
}  // namespace offwake::sched
