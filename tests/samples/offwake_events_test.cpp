// check_offwake_recording: the readers' one rule for what they read. A recording of perf
// offwake, of any kind, reads; a recording of the scheduler tracepoints is sent to perf
// offwake convert; anything else to perf offwake record. No privileges.
#include <gtest/gtest.h>

#include "samples/offwake_events.h"

namespace offwake {
namespace {

perfdata::EventDesc event(const std::string& name) {
  perfdata::EventDesc e;
  e.name = name;
  return e;
}

TEST(OffwakeRecording, AnyRecordingWithTheOffwakeEventsReads) {
  EXPECT_TRUE(check_offwake_recording(offwake_events({1, 2}), "a.data").ok());
  EXPECT_TRUE(check_offwake_recording(offwake_events({1, 2, 3, 4}), "a.data").ok());
  // --on-cpu: a sampling event beside them.
  std::vector<perfdata::EventDesc> on_cpu = offwake_events({1, 2});
  on_cpu.insert(on_cpu.begin(), event("cpu-clock"));
  EXPECT_TRUE(check_offwake_recording(on_cpu, "a.data").ok());
}

TEST(OffwakeRecording, APlainPerfRecordingIsRefusedWithTheWayToMakeOne) {
  for (const auto& events : {std::vector<perfdata::EventDesc>{event("cpu-clock")}, std::vector<perfdata::EventDesc>{}}) {
    Status s = check_offwake_recording(events, "plain.data");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().kind(), ErrorKind::kUsage);
    EXPECT_EQ(s.error().message(),
              "plain.data is not a perf offwake recording (it has none of the offwake events): make one with "
              "'perf offwake record', or with 'perf offwake convert' from a recording of the scheduler tracepoints");
  }
  Status s = check_offwake_recording({event("cpu-clock")}, "-");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message().rfind("standard input is not a perf offwake recording", 0), 0u) << s.error().message();
}

TEST(OffwakeRecording, ARecordingOfTheSchedulerTracepointsIsSentToConvert) {
  Status s = check_offwake_recording({event("sched:sched_switch"), event("sched:sched_waking")}, "stock.data");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kUsage);
  EXPECT_EQ(s.error().message(),
            "stock.data holds the scheduler tracepoints, not blocked time: make it a recording of perf offwake with "
            "'perf offwake convert -i stock.data -o OUT' and read OUT");
}

}  // namespace
}  // namespace offwake
