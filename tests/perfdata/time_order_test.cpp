// RoundOrderer: perf's window of two rounds. A record read one round late still comes out in
// time order; what is left comes out at the end.
#include <gtest/gtest.h>

#include "perfdata/time_order.h"

namespace offwake::perfdata {
namespace {

Timed at(uint64_t time, uint64_t seq) { return Timed{time, seq, 0, Record{FinishedRoundRecord{}}}; }

std::vector<uint64_t> times(const std::vector<Timed>& v) {
  std::vector<uint64_t> t;
  for (const auto& r : v) t.push_back(r.time);
  return t;
}

TEST(RoundOrderer, HandsOnUpToThePreviousRoundsNewest) {
  RoundOrderer o;
  o.add(at(10, 0));
  o.add(at(30, 1));
  EXPECT_TRUE(o.round().empty());  // nothing before the first round
  o.add(at(20, 2));                // read a round late: older than 30
  o.add(at(50, 3));
  EXPECT_EQ(times(o.round()), (std::vector<uint64_t>{10, 20, 30}));
  o.add(at(40, 4));
  EXPECT_EQ(times(o.round()), (std::vector<uint64_t>{40, 50}));
  o.add(at(60, 5));
  EXPECT_EQ(times(o.rest()), (std::vector<uint64_t>{60}));
}

TEST(RoundOrderer, TiesKeepInputOrder) {
  RoundOrderer o;
  o.add(at(5, 0));
  o.add(at(5, 1));
  o.add(at(1, 2));
  auto out = o.rest();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].seq, 2u);
  EXPECT_EQ(out[1].seq, 0u);
  EXPECT_EQ(out[2].seq, 1u);
}

}  // namespace
}  // namespace offwake::perfdata
