// ProcessDescriptions without a recording: which records it holds, which it writes, and when.
#include <gtest/gtest.h>

#include <unistd.h>

#include "synth/process_descriptions.h"

namespace offwake {
namespace {

using perfdata::Record;

perfdata::CommRecord comm(uint32_t pid, const std::string& name, uint64_t time = 0) {
  perfdata::CommRecord c;
  c.pid = c.tid = pid;
  c.comm = name;
  c.sample_id.pid = c.sample_id.tid = pid;
  c.sample_id.time = time;
  return c;
}

perfdata::TaskRecord fork_of(uint32_t child, uint32_t parent, uint64_t time) {
  perfdata::TaskRecord t;
  t.pid = t.tid = child;
  t.ppid = t.ptid = parent;
  t.time = time;
  return t;
}

struct Written {
  std::vector<Record> records;
  RecordCallback emit() {
    return [this](const Record& r) {
      records.push_back(r);
      return ok_status();
    };
  }
};

bool none_targeted(uint32_t) { return false; }

TEST(ProcessDescriptions, OthersAreHeldUntilASampleNamesThem) {
  ProcessDescriptions d;
  Written w;
  ASSERT_TRUE(d.tracking(comm(10, "outside", 5), none_targeted, w.emit()).ok());
  ASSERT_TRUE(d.tracking(comm(11, "unrelated", 6), none_targeted, w.emit()).ok());
  EXPECT_TRUE(w.records.empty());
  EXPECT_EQ(d.held(), 2u);

  ASSERT_TRUE(d.describe(10, w.emit()).ok());
  ASSERT_EQ(w.records.size(), 1u);
  EXPECT_EQ(std::get<perfdata::CommRecord>(w.records[0]).comm, "outside");
  // Once, and from then on its records go straight through; 11 is never named.
  ASSERT_TRUE(d.describe(10, w.emit()).ok());
  ASSERT_TRUE(d.tracking(comm(10, "renamed", 7), none_targeted, w.emit()).ok());
  ASSERT_EQ(w.records.size(), 2u);
  EXPECT_EQ(std::get<perfdata::CommRecord>(w.records[1]).comm, "renamed");
  EXPECT_EQ(d.held(), 1u);
}

TEST(ProcessDescriptions, TargetsGoThroughAfterWhatIsHeldOfThem) {
  ProcessDescriptions d;
  Written w;
  ASSERT_TRUE(d.tracking(comm(20, "held-first", 1), none_targeted, w.emit()).ok());
  ASSERT_TRUE(d.tracking(comm(20, "now-a-target", 2), [](uint32_t pid) { return pid == 20; }, w.emit()).ok());
  ASSERT_EQ(w.records.size(), 2u);
  EXPECT_EQ(std::get<perfdata::CommRecord>(w.records[0]).comm, "held-first");
  EXPECT_EQ(std::get<perfdata::CommRecord>(w.records[1]).comm, "now-a-target");
}

TEST(ProcessDescriptions, NamingAChildDescribesTheProcessItWasForkedFrom) {
  ProcessDescriptions d;
  Written w;
  ASSERT_TRUE(d.tracking(comm(30, "server"), none_targeted, w.emit()).ok());
  ASSERT_TRUE(d.tracking(fork_of(31, 30, 10), none_targeted, w.emit()).ok());
  ASSERT_TRUE(d.tracking(fork_of(32, 31, 20), none_targeted, w.emit()).ok());
  ASSERT_TRUE(d.describe(32, w.emit()).ok());
  // The grandchild's FORK, its parent's records (its FORK), the grandparent's COMM.
  ASSERT_EQ(w.records.size(), 3u);
  EXPECT_EQ(std::get<perfdata::TaskRecord>(w.records[0]).pid, 32u);
  EXPECT_EQ(std::get<perfdata::TaskRecord>(w.records[1]).pid, 31u);
  EXPECT_EQ(std::get<perfdata::CommRecord>(w.records[2]).comm, "server");
  EXPECT_EQ(d.held(), 0u);
}

TEST(ProcessDescriptions, KernelMapsAndLossesAreNeverHeld) {
  ProcessDescriptions d;
  Written w;
  perfdata::Mmap2Record module;
  module.cpumode = PERF_RECORD_MISC_KERNEL;
  module.pid = UINT32_MAX;
  module.filename = "[some_module]";
  ASSERT_TRUE(d.tracking(module, none_targeted, w.emit()).ok());
  ASSERT_TRUE(d.tracking(perfdata::LostRecord{}, none_targeted, w.emit()).ok());
  EXPECT_EQ(w.records.size(), 2u);
}

TEST(ProcessDescriptions, PastTheLimitEverythingIsWrittenAndNothingHeld) {
  ProcessDescriptions d(true, 4 * sizeof(Record));
  Written w;
  for (uint32_t pid = 100; pid < 103; ++pid) ASSERT_TRUE(d.tracking(comm(pid, "p"), none_targeted, w.emit()).ok());
  EXPECT_TRUE(w.records.empty());
  ASSERT_TRUE(d.tracking(comm(103, "p"), none_targeted, w.emit()).ok());
  EXPECT_TRUE(d.overflowed());
  EXPECT_EQ(w.records.size(), 4u);
  EXPECT_EQ(d.held(), 0u);
  ASSERT_TRUE(d.tracking(comm(104, "p"), none_targeted, w.emit()).ok());
  EXPECT_EQ(w.records.size(), 5u);
}

TEST(ProcessDescriptions, TheStartSnapshotHoldsThisProcessOrWritesAll) {
  BuildIdCache ids;
  Written held, all;
  auto d = ProcessDescriptions::take(ids, true, held.emit());
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_TRUE(held.records.empty());
  ASSERT_TRUE(d->describe(static_cast<uint32_t>(getpid()), held.emit()).ok());
  ASSERT_FALSE(held.records.empty());
  for (const Record& r : held.records) {
    const uint32_t pid = std::visit([](const auto& rec) -> uint32_t {
      if constexpr (requires { rec.pid; }) return rec.pid;
      else return 0;
    }, r);
    EXPECT_EQ(pid, static_cast<uint32_t>(getpid()));
  }
  auto every = ProcessDescriptions::take(ids, false, all.emit());
  ASSERT_TRUE(every.ok());
  EXPECT_GT(all.records.size(), held.records.size());
  EXPECT_EQ(every->held(), 0u);
}

}  // namespace
}  // namespace offwake
