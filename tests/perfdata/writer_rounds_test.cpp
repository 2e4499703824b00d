// PerfDataWriter::end_round: the FINISHED_ROUND records a file keeps are those perf's rule
// holds for (no record after a round older than the newest before the round kept ahead of
// it); the others become FINISHED_INIT, 8 bytes in place. A stream gets none. No privileges.
#include <gtest/gtest.h>

#include <algorithm>

#include "fixtures.h"
#include "perfdata/reader.h"
#include "perfdata/sink.h"
#include "perfdata/time_order.h"

namespace offwake::perfdata {
namespace {

SampleRecord sample_at(uint64_t time) {
  SampleRecord s;
  s.id = test::kOffcpuIds[0];
  s.pid = 1000;
  s.tid = 1001;
  s.time = time;
  s.period = 1;
  return s;
}

// A time to write, or 0 for end_round().
Bytes write(Mode mode, const std::vector<uint64_t>& script, WriterStats* stats) {
  auto w = PerfDataWriter::create(std::make_unique<MemorySink>(mode == Mode::kFile), mode, test::two_events(),
                                  test::fixed_host());
  EXPECT_TRUE(w) << w.error().message();
  if (!w) return {};
  for (uint64_t t : script) {
    Status s = t ? w->write(sample_at(t)) : w->end_round();
    EXPECT_TRUE(s) << s.error().message();
  }
  Status s = w->close();
  EXPECT_TRUE(s) << s.error().message();
  *stats = w->stats();
  return static_cast<const MemorySink&>(w->sink()).data();
}

// What the file holds, in order: a sample's time, 0 for FINISHED_ROUND, 1 for FINISHED_INIT.
std::vector<uint64_t> read_back(Bytes data) {
  auto r = PerfDataReader::from_memory(std::move(data));
  EXPECT_TRUE(r) << r.error().message();
  std::vector<uint64_t> out;
  if (!r) return out;
  for (;;) {
    auto next = r->next();
    EXPECT_TRUE(next) << next.error().message();
    if (!next || !*next) break;
    if (std::holds_alternative<FinishedRoundRecord>(**next)) out.push_back(0);
    else if (std::holds_alternative<FinishedInitRecord>(**next)) out.push_back(1);
    else out.push_back(record_time(**next, r->events()[0].attr));
  }
  return out;
}

// perf's rule, over read_back()'s list.
bool keeps_perfs_rule(const std::vector<uint64_t>& file) {
  uint64_t newest = 0, before_last = 0, before_previous = 0;
  for (uint64_t t : file) {
    if (t == 1) continue;
    if (t == 0) {
      before_previous = before_last;
      before_last = newest;
      continue;
    }
    if (t < before_previous) return false;
    newest = std::max(newest, t);
  }
  return true;
}

TEST(WriterRounds, ARoundThatALaterRecordBreaksBecomesFinishedInit) {
  // 350 comes after round 3, older than 500, the newest before round 2: with round 3 kept,
  // perf would hand on 500 at round 3 before 350. With round 3 dropped, 350 follows round 2
  // and need only be as new as 300, the newest before round 1; round 4 holds.
  const std::vector<uint64_t> script = {100, 300, 0, 200, 500, 0, 400, 0, 350, 600, 0, 700};
  ASSERT_FALSE(keeps_perfs_rule(script));
  WriterStats stats;
  const std::vector<uint64_t> file = read_back(write(Mode::kFile, script, &stats));
  EXPECT_EQ(file, (std::vector<uint64_t>{100, 300, 0, 200, 500, 0, 400, 1, 350, 600, 0, 700}));
  EXPECT_TRUE(keeps_perfs_rule(file));
  EXPECT_EQ(stats.rounds, 3u);
  EXPECT_EQ(stats.rounds_dropped, 1u);
}

TEST(WriterRounds, RoundsThatHoldAreAllKept) {
  const std::vector<uint64_t> script = {100, 300, 0, 200, 500, 0, 400, 0, 550, 600, 0, 0, 700, 0};
  ASSERT_TRUE(keeps_perfs_rule(script));
  WriterStats stats;
  const std::vector<uint64_t> file = read_back(write(Mode::kFile, script, &stats));
  // A round with nothing written since the last one is not written.
  EXPECT_EQ(file, (std::vector<uint64_t>{100, 300, 0, 200, 500, 0, 400, 0, 550, 600, 0, 700, 0}));
  EXPECT_EQ(stats.rounds, 5u);
  EXPECT_EQ(stats.rounds_dropped, 0u);
}

TEST(WriterRounds, AnOldRecordAtTheEndUndoesTheRoundsAfterItsTime) {
  // A sample written at the end, stamped early in the recording (150): the rounds kept are
  // those up to the first whose predecessor's newest (100) it is not older than.
  const std::vector<uint64_t> script = {100, 0, 200, 0, 300, 0, 400, 0, 150};
  WriterStats stats;
  const std::vector<uint64_t> file = read_back(write(Mode::kFile, script, &stats));
  EXPECT_EQ(file, (std::vector<uint64_t>{100, 0, 200, 0, 300, 1, 400, 1, 150}));
  EXPECT_TRUE(keeps_perfs_rule(file));
  EXPECT_EQ(stats.rounds, 2u);
  EXPECT_EQ(stats.rounds_dropped, 2u);
}

TEST(WriterRounds, AStreamGetsNone) {
  const std::vector<uint64_t> script = {100, 300, 0, 200, 500, 0, 700};
  WriterStats stats;
  const std::vector<uint64_t> file = read_back(write(Mode::kPipe, script, &stats));
  EXPECT_EQ(file, (std::vector<uint64_t>{100, 300, 200, 500, 700}));
  EXPECT_EQ(stats.rounds, 0u);
}

}  // namespace
}  // namespace offwake::perfdata
