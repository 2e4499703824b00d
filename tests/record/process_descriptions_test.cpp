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

perfdata::Mmap2Record map_of(uint32_t pid, const std::string& path) {
  perfdata::Mmap2Record m;
  m.pid = m.tid = pid;
  m.start = 0x400000;
  m.len = 0x1000;
  m.filename = path;
  m.sample_id.pid = m.sample_id.tid = pid;
  return m;
}

// --switch-output: a window's descriptions take from the last window's the processes that are
// gone (no longer in /proc), for one window only; live ones are described from /proc again.
TEST(ProcessDescriptions, SwitchOutputCarriesTheGoneIntoOneWindow) {
  constexpr uint32_t kGone = 4'000'001;  // above PID_MAX_LIMIT: never in /proc
  const uint32_t self = static_cast<uint32_t>(getpid());
  BuildIdCache ids;
  Written first_file, second_file, third_file;
  auto first = ProcessDescriptions::take(ids, true, first_file.emit(), ProcessDescriptions::kDefaultHoldLimit, true);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->tracking(comm(kGone, "short-lived", 5), none_targeted, first_file.emit()).ok());
  ASSERT_TRUE(first->tracking(map_of(kGone, "/bin/short-lived"), none_targeted, first_file.emit()).ok());

  auto second = ProcessDescriptions::take(ids, true, second_file.emit(), ProcessDescriptions::kDefaultHoldLimit, true);
  ASSERT_TRUE(second.ok());
  auto carried = second->carry_gone(*first, second_file.emit());
  ASSERT_TRUE(carried.ok());
  EXPECT_GE(*carried, 1u);  // kGone (and any process of the machine that exited meanwhile)
  EXPECT_TRUE(second_file.records.empty()) << "held until a sample names them";
  ASSERT_TRUE(second->describe(kGone, second_file.emit()).ok());
  ASSERT_EQ(second_file.records.size(), 2u);
  EXPECT_EQ(std::get<perfdata::CommRecord>(second_file.records[0]).comm, "short-lived");
  EXPECT_EQ(std::get<perfdata::Mmap2Record>(second_file.records[1]).filename, "/bin/short-lived");
  // This process is alive: described by the second window's own /proc read, not carried.
  second_file.records.clear();
  ASSERT_TRUE(second->describe(self, second_file.emit()).ok());
  ASSERT_FALSE(second_file.records.empty());
  size_t comms = 0;
  for (const auto& r : second_file.records) comms += std::holds_alternative<perfdata::CommRecord>(r);
  EXPECT_GE(comms, 1u);

  // A window further on, the gone process is no longer carried: memory follows the living.
  auto third = ProcessDescriptions::take(ids, true, third_file.emit(), ProcessDescriptions::kDefaultHoldLimit, true);
  ASSERT_TRUE(third.ok());
  ASSERT_TRUE(third->carry_gone(*second, third_file.emit()).ok());
  ASSERT_TRUE(third->describe(kGone, third_file.emit()).ok());
  EXPECT_TRUE(third_file.records.empty());
}

}  // namespace
}  // namespace offwake
