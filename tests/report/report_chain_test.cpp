// Wakeup chains (perf offwake record --chain-depth N) through every reader: synthetic
// recordings written by AggregateSamples and PerfDataWriter, with a stack table of the test's
// own (real kernel functions from /proc/kallsyms, user functions of tests/e2e/symbols_target),
// read by perf offwake report (--folded, --stdio, the flame stacks, filters), by Debian's
// `perf script` (plain and with scripts/offwake-collapse.py) and by `perf offwake script`
// (param_dict['chain']). The relay of issue 11: relay1 (A) naps and then wakes relay2 (B),
// blocked on a futex; B then wakes relay3 (C), blocked reading. As root (kernel addresses).
#include <sys/mman.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "support/paths.h"
#include "support/stack_table.h"
#include "perfdata/writer.h"
#include "samples/aggregate_samples.h"
#include "samples/offwake_events.h"
#include "report/flamegraph.h"
#include "report/folded.h"
#include "report/profile.h"
#include "report/stdio_report.h"
#include "support/live_target.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "synth/elf_file.h"
#include "synth/host_info.h"
#include "synth/kernel_maps.h"

namespace offwake {
namespace {

using perfdata::SampleRecord;

using test::kOffwake;
const std::string kCollapse = test::kScripts + "offwake-collapse.py";

using test::StackTable;

constexpr uint32_t kRelay1 = 70001, kRelay2 = 70002, kRelay3 = 70003;
constexpr uint64_t kMapStart = 0x400000;  // where symbols_target is mapped in the three processes

// Stack ids of the table: the blocked thread's, then per hop the block and its waker.
enum StackId : int64_t {
  kC_Kernel = 1, kC_User, kB_WakeKernel, kB_WakeUser,      // C blocked; hop 1: B wakes C
  kB_BlockKernel, kB_BlockUser, kA_WakeKernel, kA_WakeUser,  // hop 2: B blocked, A wakes B
  kA_BlockKernel, kA_BlockUser, kIrq_WakeKernel,             // hop 3: A naps, an interrupt wakes A
};

// Root first, as a folded line has blocked stacks (waker stacks are the other way round).
const std::vector<std::string> kC = {"main", "st_middle", "st_leaf", "do_syscall_64", "ksys_read", "vfs_read"};
const std::vector<std::string> kBWakes = {"__wake_up_sync_key", "vfs_write", "ksys_write", "st_middle", "main"};
const std::vector<std::string> kBBlocked = {"main", "st_leaf", "do_futex", "futex_wait"};
const std::vector<std::string> kAWakes = {"__wake_up_common", "futex_wake", "main"};
const std::vector<std::string> kABlocked = {"st_middle", "common_nsleep", "hrtimer_nanosleep", "do_nanosleep"};
const std::vector<std::string> kIrqWakes = {"hrtimer_wakeup", "__hrtimer_run_queues", "hrtimer_interrupt"};

std::string join(const std::vector<std::vector<std::string>>& parts) {
  std::string out;
  for (const auto& part : parts)
    for (const auto& name : part) out += (out.empty() ? "" : ";") + name;
  return out;
}

// The folded line of the whole chain (hops 1-3) and of the chain that ends after hop 1.
std::string full_chain_line(uint64_t ns) {
  return join({{"relay3"}, kC, {"--"}, kBWakes, {"--"}, kBBlocked, {"--"}, kAWakes, {"--"}, kABlocked, {"--"},
               kIrqWakes, {"[hardirq]"}}) +
         " " + std::to_string(ns) + "\n";
}
std::string hop1_line(uint64_t ns) {
  return join({{"relay3"}, kC, {"--"}, kBWakes, {"relay2"}}) + " " + std::to_string(ns) + "\n";
}

// Writes synthetic recordings about the relay.
class RelayWriter {
 public:
  // Fills `table` with the stacks; false (with a failure) if a function is missing.
  bool build_table() {
    auto k = Kallsyms::load();
    if (!k) return ADD_FAILURE() << k.error().message(), false;
    kallsyms_.emplace(std::move(k).value());
    auto elf = ElfFile::open(test::kSymbolsTarget);
    if (!elf) return ADD_FAILURE() << elf.error().message(), false;
    elf_.emplace(std::move(elf).value());
    bool ok = true;
    auto kernel = [&](std::initializer_list<const char*> leaf_first) {
      std::vector<uint64_t> ips;
      for (const char* name : leaf_first) {
        auto a = kallsyms_->address_of(name);
        if (!a || *a == 0) {
          ADD_FAILURE() << "no " << name << " in /proc/kallsyms (not root?)";
          ok = false;
        }
        ips.push_back(a.value_or(0) + 4);
      }
      return ips;
    };
    auto user = [&](std::initializer_list<const char*> leaf_first) {
      std::vector<uint64_t> ips;
      for (const char* name : leaf_first) {
        auto sym = elf_->find_function(name);
        auto off = sym ? elf_->file_offset_of(sym->value + 4) : std::nullopt;
        if (!off) {
          ADD_FAILURE() << "no " << name << " in " << test::kSymbolsTarget;
          ok = false;
        }
        ips.push_back(kMapStart + off.value_or(0));
      }
      return ips;
    };
    table.stacks[kC_Kernel] = kernel({"vfs_read", "ksys_read", "do_syscall_64"});
    table.stacks[kC_User] = user({"st_leaf", "st_middle", "main"});
    table.stacks[kB_WakeKernel] = kernel({"__wake_up_sync_key", "vfs_write", "ksys_write"});
    table.stacks[kB_WakeUser] = user({"st_middle", "main"});
    table.stacks[kB_BlockKernel] = kernel({"futex_wait", "do_futex"});
    table.stacks[kB_BlockUser] = user({"st_leaf", "main"});
    table.stacks[kA_WakeKernel] = kernel({"__wake_up_common", "futex_wake"});
    table.stacks[kA_WakeUser] = user({"main"});
    table.stacks[kA_BlockKernel] = kernel({"do_nanosleep", "hrtimer_nanosleep", "common_nsleep"});
    table.stacks[kA_BlockUser] = user({"st_middle"});
    table.stacks[kIrq_WakeKernel] = kernel({"hrtimer_wakeup", "__hrtimer_run_queues", "hrtimer_interrupt"});
    return ok;
  }

  // C blocked reading, woken by B (hop 1); with `hops` 2, B's futex wait woken by A (hop 2)
  // and A's nap woken by a timer interrupt (hop 3).
  static Aggregate relay(uint32_t hops, uint32_t end, uint64_t ns, uint64_t time) {
    Aggregate a{};
    std::memset(&a.key, 0, sizeof a.key);
    offwake_key& k = a.key;
    k.tgid = k.tid = kRelay3;
    k.kern_stack_id = kC_Kernel;
    k.user_stack_id = kC_User;
    k.state = OFFWAKE_STATE_INTERRUPTIBLE;
    k.waker_tgid = k.waker_tid = kRelay2;
    k.waker_kern_stack_id = kB_WakeKernel;
    k.waker_user_stack_id = kB_WakeUser;
    std::strcpy(k.comm, "relay3");
    std::strcpy(k.waker_comm, "relay2");
    k.chain.hops = hops;
    k.chain.end = end;
    if (hops >= 1) {
      offwake_hop& h = k.chain.hop[0];
      h = offwake_hop{kB_BlockKernel, kB_BlockUser, OFFWAKE_STATE_INTERRUPTIBLE, 0, kRelay1, kRelay1, 0,
                      kA_WakeKernel, kA_WakeUser, "relay1", 0};
    }
    if (hops >= 2) {
      offwake_hop& h = k.chain.hop[1];
      h = offwake_hop{kA_BlockKernel, kA_BlockUser, OFFWAKE_STATE_UNINTERRUPTIBLE, OFFWAKE_WAKER_HARDIRQ, 0, 0, 0,
                      kIrq_WakeKernel, kNoStack, "[hardirq]", 0};
    }
    a.value.total_ns = ns;
    a.value.count = 2;
    a.value.max_ns = ns / 2;
    a.value.last_ns = time;
    return a;
  }

  // A recording of `aggregates` (chain events only with `chain`); `keep`, if set, says which
  // samples of each aggregate's group to write (to cut groups short).
  std::string write(const std::string& name, bool chain, const std::vector<Aggregate>& aggregates,
                    const std::function<bool(size_t aggregate, size_t sample)>& keep = {}) {
    const std::string path = dir.file(name);
    const OffwakeEventIds ids = pick_event_ids({}, chain);
    auto w = perfdata::PerfDataWriter::create_file(path, offwake_events(ids), collect_host_info({"chain_test"}));
    EXPECT_TRUE(w.ok()) << w.error().message();
    if (!w) return path;
    auto kmap = kernel_mmap(*kallsyms_);
    EXPECT_TRUE(kmap.ok());
    EXPECT_TRUE(w->write(*kmap).ok());
    w->add_build_id(kernel_build_id_entry());
    const uint64_t size = std::filesystem::file_size(test::kSymbolsTarget);
    for (auto [pid, comm] : {std::pair{kRelay1, "relay1"}, {kRelay2, "relay2"}, {kRelay3, "relay3"}}) {
      perfdata::CommRecord c;
      c.pid = c.tid = pid;
      c.comm = comm;
      c.sample_id = {pid, pid, 0, ids.time, 0, 0};
      EXPECT_TRUE(w->write(c).ok());
      perfdata::Mmap2Record m;
      m.pid = m.tid = pid;
      m.start = kMapStart;
      m.len = (size + 4095) & ~uint64_t{4095};
      m.build_id = elf_->build_id();
      m.prot = PROT_READ | PROT_EXEC;
      m.flags = MAP_PRIVATE;
      m.filename = test::kSymbolsTarget;
      m.sample_id = c.sample_id;
      EXPECT_TRUE(w->write(m).ok());
    }
    for (const PseudoWaker& p : kPseudoWakers) {
      perfdata::CommRecord c;
      c.pid = c.tid = p.tid;
      c.comm = p.comm;
      c.sample_id = {p.tid, p.tid, 0, ids.waker, 0, 0};
      EXPECT_TRUE(w->write(c).ok());
    }
    EXPECT_TRUE(w->finished_init().ok());
    AggregateSamples convert(table, ids, &*kallsyms_);
    for (size_t i = 0; i < aggregates.size(); ++i) {
      const auto samples = convert.convert(aggregates[i], 1);
      for (size_t j = 0; j < samples.size(); ++j) {
        if (keep && !keep(i, j)) continue;
        EXPECT_TRUE(w->write(samples[j]).ok());
      }
    }
    EXPECT_TRUE(w->close().ok());
    return path;
  }

  test::TempDir dir;
  StackTable table;
  std::optional<Kallsyms> kallsyms_;
  std::optional<ElfFile> elf_;
};

constexpr uint64_t kT1 = 5'000'000'000, kT2 = 6'000'000'000, kT3 = 7'000'000'000;

// One recording for the tests: the whole chain twice (summed by every reader), and a chain
// that ends after hop 1 because B was not seen blocking.
class Chains : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    writer_ = new RelayWriter();
    if (!writer_->build_table()) return;
    data_ = writer_->write("chain.data", true,
                           {RelayWriter::relay(2, OFFWAKE_CHAIN_END_IRQ, 300'000'000, kT1),
                            RelayWriter::relay(0, OFFWAKE_CHAIN_END_UNSEEN, 50'000'000, kT2),
                            RelayWriter::relay(2, OFFWAKE_CHAIN_END_IRQ, 100'000'000, kT3)});
  }
  static void TearDownTestSuite() {
    delete writer_;
    writer_ = nullptr;
  }
  void SetUp() override {
    if (data_.empty()) GTEST_FAIL() << "no recording";
  }
  static std::string script(const std::string& name, const std::string& text) {
    const std::string path = writer_->dir.file(name);
    std::ofstream(path) << text;
    return path;
  }
  static inline RelayWriter* writer_ = nullptr;
  static inline std::string data_;
};

const std::string kExpectedFolded = full_chain_line(400'000'000) + hop1_line(50'000'000);

void expect_perf_script_chains(const test::RunResult& r);

TEST_F(Chains, ReportFoldedHasEveryHopInOrder) {
  auto r = test::run(kOffwake + " report --folded -i " + data_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, kExpectedFolded);
}

TEST_F(Chains, DebianPerfScriptCollapseGivesTheSameLines) {
  auto r = test::run(std::string(test::kDebianPerf) + " script -i " + data_ + " -s " + kCollapse);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, kExpectedFolded);
  EXPECT_EQ(r.err.find("cut short"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("without a waker"), std::string::npos) << r.err;
}

TEST_F(Chains, OffwakeScriptCollapseGivesTheSameLines) {
  auto r = test::run(kOffwake + " script -i " + data_ + " -s " + kCollapse);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, kExpectedFolded);
}

// The real perf script, plain (Debian's 6.1 and 6.12): each chain right after its blocked
// sample, hop by hop.
TEST_F(Chains, PerfScriptShowsHopSamplesAfterTheBlockedSample) {
  for (const std::string& perf : {std::string(test::kDebianPerf), test::perf612_path()}) {
    SCOPED_TRACE(perf);
    expect_perf_script_chains(test::run(perf + " script " + test::kPerfScriptFields + " -i " + data_));
  }
}

void expect_perf_script_chains(const test::RunResult& r) {
  ASSERT_EQ(r.status, 0) << r.err;
  const auto samples = test::parse_perf_script(r.out);
  ASSERT_EQ(samples.size(), 6u + 2u + 6u) << r.out;
  const std::vector<std::pair<std::string, uint32_t>> chain = {
      {"offwake-time", kRelay3},        {"offwake-waker", kRelay2},     {"offwake-hop-blocked", kRelay2},
      {"offwake-hop-waker", kRelay1},   {"offwake-hop-blocked", kRelay1}, {"offwake-hop-waker", kHardirqWaker.tid}};
  for (size_t i = 0; i < chain.size(); ++i) {
    EXPECT_EQ(samples[i].event, chain[i].first) << i << "\n" << r.out;
    EXPECT_EQ(samples[i].tid, chain[i].second) << i;
    EXPECT_EQ(samples[i].period, 300'000'000u) << i;
  }
  EXPECT_EQ(samples[1].comm, "relay2");
  EXPECT_EQ(samples[3].comm, "relay1");
  EXPECT_EQ(samples[5].comm, "[hardirq]");
  EXPECT_TRUE(samples[2].has_frame("futex_wait")) << r.out;
  EXPECT_TRUE(samples[4].has_frame("do_nanosleep")) << r.out;
  EXPECT_TRUE(samples[5].has_frame("hrtimer_wakeup")) << r.out;
  // The chain that ends after hop 1: its two samples, then the next chain.
  EXPECT_EQ(samples[6].event, "offwake-time");
  EXPECT_EQ(samples[7].event, "offwake-waker");
  EXPECT_EQ(samples[8].event, "offwake-time");
  EXPECT_EQ(samples[13].event, "offwake-hop-waker");
}

// Prints param_dict['chain'] of each offwake-time sample, one line per hop.
const char* kChainPrinter = R"(
def names(callchain):
    return ",".join(f.get("sym", {}).get("name", "?") for f in callchain)

def thread(d):
    return "%d/%d %s" % (d["pid"], d["tid"], d["comm"])

def process_event(d):
    if d["ev_name"] != "offwake-time":
        return
    print("sample", d["sample"]["tid"], d["sample"]["period"], d.get("chain_end"), d.get("chain_missing"))
    for h in d.get("chain", []):
        line = "hop %d end=%s" % (h["hop"], h["end"])
        if "blocked" in h:
            b = h["blocked"]
            line += " blocked=%s [%s] %s" % (thread(b), b["state"], names(b["callchain"]))
        if "tid" in h:
            line += " waker=%s %s %s" % (thread(h), h["context"], names(h["callchain"]))
        print(line)
)";

std::string names_leaf_first(const std::vector<std::string>& root_first) {
  std::string out;
  for (auto it = root_first.rbegin(); it != root_first.rend(); ++it) out += (out.empty() ? "" : ",") + *it;
  return out;
}
std::string names_as_is(const std::vector<std::string>& leaf_first) {
  std::string out;
  for (const auto& n : leaf_first) out += (out.empty() ? "" : ",") + n;
  return out;
}

TEST_F(Chains, ParamDictChainListsEveryHop) {
  auto r = test::run(kOffwake + " script -i " + data_ + " -s " + script("chain.py", kChainPrinter));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string irq = std::to_string(kHardirqWaker.tid);
  const std::string hop1 = "hop 1 end=None waker=70002/70002 relay2 thread " + names_as_is(kBWakes) + "\n";
  const std::string full = "sample 70003 300000000 interrupt None\n" + hop1 +
                           "hop 2 end=None blocked=70002/70002 relay2 [S] " + names_leaf_first(kBBlocked) +
                           " waker=70001/70001 relay1 thread " + names_as_is(kAWakes) + "\n" +
                           "hop 3 end=interrupt blocked=70001/70001 relay1 [D] " + names_leaf_first(kABlocked) +
                           " waker=" + irq + "/" + irq + " [hardirq] hardirq " + names_as_is(kIrqWakes) + "\n";
  const std::string short_chain = "sample 70003 50000000 unseen None\n"
                                  "hop 1 end=unseen waker=70002/70002 relay2 thread " +
                                  names_as_is(kBWakes) + "\n";
  std::string third = full;
  third.replace(third.find("300000000"), 9, "100000000");
  EXPECT_EQ(r.out, full + short_chain + third);
}

TEST_F(Chains, ProfileSumsIdenticalChainsAndKeepsHopDetails) {
  auto p = report::load_profile(data_, {});
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p->stacks.size(), 2u);
  EXPECT_EQ(p->chains_cut_short, 0u);
  const report::Stack* full = nullptr;
  for (const auto& s : p->stacks)
    if (!s.chain.empty()) full = &s;
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->ns, 400'000'000u);
  EXPECT_EQ(full->count, 4u);
  EXPECT_EQ(full->chain_end, "interrupt");
  ASSERT_EQ(full->chain.size(), 2u);
  EXPECT_EQ(full->chain[0].thread.tid, kRelay2);
  EXPECT_EQ(full->chain[0].state, "S");
  EXPECT_EQ(full->chain[0].waker_context, "thread");
  EXPECT_EQ(full->chain[1].thread.tid, kRelay1);
  EXPECT_EQ(full->chain[1].state, "D");
  ASSERT_TRUE(full->chain[1].waker.has_value());
  EXPECT_EQ(full->chain[1].waker->comm, "[hardirq]");
  EXPECT_EQ(full->chain[1].waker_context, "hardirq");
}

TEST_F(Chains, FiltersApplyToHopFramesAndNoWakerDropsTheChain) {
  report::Filters kernel_only;
  kernel_only.kernel_only = true;
  auto k = report::load_profile(data_, kernel_only);
  ASSERT_TRUE(k.ok()) << k.error().message();
  for (const auto& s : k->stacks)
    for (const auto& h : s.chain) {
      for (const auto& f : h.frames) EXPECT_TRUE(f.kernel) << f.name;
      for (const auto& f : h.waker_frames) EXPECT_TRUE(f.kernel) << f.name;
    }
  const auto lines = report::folded_lines(*k, {});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "relay3;do_syscall_64;ksys_read;vfs_read;--;__wake_up_sync_key;vfs_write;ksys_write;--;"
                      "do_futex;futex_wait;--;__wake_up_common;futex_wake;--;common_nsleep;hrtimer_nanosleep;"
                      "do_nanosleep;--;hrtimer_wakeup;__hrtimer_run_queues;hrtimer_interrupt;[hardirq] 400000000\n");

  report::Filters no_waker;
  no_waker.no_waker = true;
  auto n = report::load_profile(data_, no_waker);
  ASSERT_TRUE(n.ok()) << n.error().message();
  ASSERT_EQ(n->stacks.size(), 1u);
  EXPECT_TRUE(n->stacks[0].chain.empty());
  EXPECT_EQ(n->stacks[0].chain_end, "");
  EXPECT_EQ(report::folded_lines(*n, {}), std::vector<std::string>{join({{"relay3"}, kC}) + " 450000000\n"});
}

TEST_F(Chains, FlameStacksStackTheHopsUpwardAsTheFoldedLine) {
  auto p = report::load_profile(data_, {});
  ASSERT_TRUE(p.ok()) << p.error().message();
  const auto stacks = report::flame_stacks(*p, false);
  ASSERT_EQ(stacks.size(), 2u);
  for (const auto& fs : stacks) {
    std::string line;
    for (const auto& f : fs.frames) line += (line.empty() ? "" : ";") + f.name;
    line += " " + std::to_string(fs.value) + "\n";
    EXPECT_NE(kExpectedFolded.find(line), std::string::npos) << line;
    if (fs.value != 400'000'000) continue;
    // Blocked stacks in blocked colours, waker stacks in waker colours, apart by separators.
    using report::FlameKind;
    std::string kinds;
    for (const auto& f : fs.frames) {
      switch (f.kind) {
        case FlameKind::kThread: kinds += 'T'; break;
        case FlameKind::kKernel: case FlameKind::kUser: kinds += 'b'; break;
        case FlameKind::kSeparator: kinds += '-'; break;
        case FlameKind::kWakerKernel: case FlameKind::kWakerUser: kinds += 'w'; break;
        case FlameKind::kWakerThread: kinds += 'W'; break;
        default: kinds += '?';
      }
    }
    EXPECT_EQ(kinds, "Tbbbbbb-wwwww-bbbb-www-bbbb-wwwW");
  }
}

TEST_F(Chains, StdioShowsEachHopAndTheEnd) {
  auto r = test::run(kOffwake + " report --stdio -i " + data_);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string hop2 = "hop 2: relay2 70002/70002 [S] blocked in futex_wait <- do_futex <- st_leaf <- ..., "
                           "woken by relay1 70001/70001 at __wake_up_common <- futex_wake <- main\n";
  const std::string hop3 = "hop 3: relay1 70001/70001 [D] blocked in do_nanosleep <- hrtimer_nanosleep <- "
                           "common_nsleep <- ..., woken by [hardirq] at hrtimer_wakeup <- __hrtimer_run_queues <- "
                           "hrtimer_interrupt\n";
  const size_t at2 = r.out.find(hop2), at3 = r.out.find(hop3);
  ASSERT_NE(at2, std::string::npos) << r.out;
  ASSERT_NE(at3, std::string::npos) << r.out;
  EXPECT_LT(at2, at3);
  EXPECT_NE(r.out.find("chain ends: interrupt\n", at3), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chain ends: unseen\n"), std::string::npos) << r.out;
}

// Wakers named without their stacks (woken before the block reached its threshold) say so, on
// the waker's line and a hop's; a waker whose stacks are missing shows "[no stack]".
TEST(ChainsWokenEarly, StdioSaysTheStacksWereNotTaken) {
  RelayWriter writer;
  ASSERT_TRUE(writer.build_table());
  Aggregate early = RelayWriter::relay(1, OFFWAKE_CHAIN_END_NO_WAKER, 200'000'000, kT1);
  early.key.waker_flags = OFFWAKE_WAKER_EARLY;
  early.key.waker_kern_stack_id = early.key.waker_user_stack_id = kNoStack;
  offwake_hop& hop = early.key.chain.hop[0];
  hop.waker_flags = OFFWAKE_WAKER_EARLY;
  hop.waker_kern_stack_id = hop.waker_user_stack_id = kNoStack;
  Aggregate missing = RelayWriter::relay(0, OFFWAKE_CHAIN_END_UNSEEN, 50'000'000, kT2);
  missing.key.waker_kern_stack_id = missing.key.waker_user_stack_id = kNoStack;
  const std::string data = writer.write("early.data", true, {early, missing});
  auto r = test::run(kOffwake + " report --stdio -i " + data);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("woken by relay2 70002/70002: [stacks not taken: woken early]\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", woken by relay1 70001/70001 at [stacks not taken: woken early]\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("woken by relay2 70002/70002: [no stack]\n"), std::string::npos) << r.out;
  // Folded (and so --svg and --pprof), ours and offwake-collapse.py's under Debian's perf and
  // ours: the label where each hop's waker stacks would be; a stack missing is only missing.
  const std::string early_line = join({{"relay3"}, kC, {"--"}, {"[stacks not taken: woken early]"}, {"--"}, kBBlocked,
                                       {"--"}, {"[stacks not taken: woken early]"}, {"relay1"}}) +
                                 " 200000000\n";
  const std::string missing_line = join({{"relay3"}, kC, {"--"}, {"relay2"}}) + " 50000000\n";
  auto folded = test::run(kOffwake + " report --folded -i " + data);
  ASSERT_EQ(folded.status, 0) << folded.err;
  EXPECT_EQ(folded.out, early_line + missing_line);
  auto perf = test::run(std::string(test::kDebianPerf) + " script -i " + data + " -s " + kCollapse);
  ASSERT_EQ(perf.status, 0) << perf.err;
  EXPECT_EQ(perf.out, folded.out);
  auto ours = test::run(kOffwake + " script -i " + data + " -s " + kCollapse);
  ASSERT_EQ(ours.status, 0) << ours.err;
  EXPECT_EQ(ours.out, folded.out);
}

TEST_F(Chains, PprofAndSvgAreWritten) {
  const std::string pb = writer_->dir.file("chain.pb.gz"), svg = writer_->dir.file("chain.svg");
  auto r = test::run(kOffwake + " report --pprof " + pb + " --svg " + svg + " -i " + data_);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string doc = test::read_file(svg);
  for (const char* name : {"futex_wait", "do_nanosleep", "hrtimer_wakeup", "[hardirq]"})
    EXPECT_NE(doc.find(name), std::string::npos) << name;
  EXPECT_GT(std::filesystem::file_size(pb), 0u);
}

// The other bundled scripts under Debian's perf: offwake-top.py names the chain after the
// waker, offwake-wallclock.py counts the blocked time once and no hop sample as skipped,
// offwake-flamegraph.py draws what offwake-collapse.py folds.
TEST_F(Chains, OtherBundledScriptsUseOrSkipTheHopSamples) {
  const std::string perf = std::string(test::kDebianPerf) + " script -i " + data_ + " -s " OFFWAKE_SOURCE_DIR "/scripts/";
  auto top = test::run(perf + "offwake-top.py");
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("woken by relay2  st_middle < relay1  main < [hardirq]  hrtimer_wakeup\n"), std::string::npos)
      << top.out;
  EXPECT_NE(top.out.find("total blocked 450.00 ms in 1 stacks"), std::string::npos) << top.out;
  auto wall = test::run(perf + "offwake-wallclock.py");
  ASSERT_EQ(wall.status, 0) << wall.err;
  EXPECT_EQ(wall.out, join({{"relay3"}, kC, {"[off-cpu]"}}) + " 450000000\n");
  EXPECT_EQ(wall.err.find("skipped"), std::string::npos) << wall.err;
  const std::string svg = writer_->dir.file("scripts.svg");
  auto flame = test::run(perf + "offwake-flamegraph.py -- -o " + svg);
  ASSERT_EQ(flame.status, 0) << flame.err;
  EXPECT_NE(flame.err.find("(2 stacks, 450.00 ms)"), std::string::npos) << flame.err;
  const std::string doc = test::read_file(svg);
  for (const char* name : {"<title>futex_wait ", "<title>do_nanosleep ", "<title>[hardirq] "})
    EXPECT_NE(doc.find(name), std::string::npos) << name;
}

// Groups cut short: the first chain loses its last sample (hop 3's waker); the file ends
// after the waker sample of another chain that announced two more hops.
TEST(ChainsCutShort, EveryReaderDeliversWhatIsThereAndSaysSo) {
  RelayWriter w;
  ASSERT_TRUE(w.build_table());
  const std::string data = w.write(
      "cut.data", true,
      {RelayWriter::relay(2, OFFWAKE_CHAIN_END_IRQ, 300'000'000, kT1),
       RelayWriter::relay(0, OFFWAKE_CHAIN_END_UNSEEN, 50'000'000, kT2),
       RelayWriter::relay(2, OFFWAKE_CHAIN_END_DEPTH, 70'000'000, kT3)},
      [](size_t aggregate, size_t sample) { return aggregate == 1 || (aggregate == 0 ? sample < 5 : sample < 2); });
  const std::string cut = join({{"relay3"}, kC, {"--"}, kBWakes, {"--"}, kBBlocked, {"--"}, kAWakes, {"--"},
                                kABlocked, {"--"}, {"[unknown waker]"}}) +
                          " 300000000\n";
  // The chain that ends after hop 1 and the one cut short after it fold alike: summed.
  const std::string expected = cut + hop1_line(120'000'000);
  auto folded = test::run(kOffwake + " report --folded -i " + data);
  ASSERT_EQ(folded.status, 0) << folded.err;
  EXPECT_EQ(folded.out, expected);
  auto perf = test::run(std::string(test::kDebianPerf) + " script -i " + data + " -s " + kCollapse);
  ASSERT_EQ(perf.status, 0) << perf.err;
  EXPECT_EQ(perf.out, expected);
  EXPECT_NE(perf.err.find("offwake-collapse: 2 wakeup chains cut short"), std::string::npos) << perf.err;
  auto ours = test::run(kOffwake + " script -i " + data + " -s " + kCollapse);
  ASSERT_EQ(ours.status, 0) << ours.err;
  EXPECT_EQ(ours.out, expected);
  EXPECT_NE(ours.err.find("offwake-collapse: 2 wakeup chains cut short"), std::string::npos) << ours.err;

  auto stdio = test::run(kOffwake + " report --stdio -i " + data);
  ASSERT_EQ(stdio.status, 0) << stdio.err;
  EXPECT_NE(stdio.out.find("# Warning: 2 wakeup chains are cut short"), std::string::npos) << stdio.out;
  EXPECT_NE(stdio.out.find("woken by [unknown waker]\n"), std::string::npos) << stdio.out;
  EXPECT_NE(stdio.out.find("chain ends: cut-short\n"), std::string::npos) << stdio.out;

  const std::string printer = w.dir.file("chain.py");
  std::ofstream(printer) << kChainPrinter;
  auto dict = test::run(kOffwake + " script -i " + data + " -s " + printer);
  ASSERT_EQ(dict.status, 0) << dict.err;
  EXPECT_NE(dict.out.find("sample 70003 300000000 cut-short 1\n"), std::string::npos) << dict.out;
  EXPECT_NE(dict.out.find("hop 3 end=cut-short blocked=70001/70001 relay1 [D] " + names_leaf_first(kABlocked) + "\n"),
            std::string::npos)
      << dict.out;
  EXPECT_NE(dict.out.find("sample 70003 70000000 cut-short 2\nhop 1 end=cut-short waker=70002/70002"),
            std::string::npos)
      << dict.out;
}

// A blocked sample cut from its waker's sample, which always follows it (the file ends right
// after it; with chains and without): each reader shows it with '[unknown waker]' and says so,
// the table as offwake-collapse.py does. Its time is kept.
TEST(ChainsCutShort, ABlockedSampleWithoutItsWakerSampleIsWarnedAbout) {
  for (const bool chain : {false, true}) {
    SCOPED_TRACE(chain ? "with chains" : "without chains");
    RelayWriter w;
    ASSERT_TRUE(w.build_table());
    const std::string data = w.write(
        "nowaker.data", chain,
        {RelayWriter::relay(0, chain ? OFFWAKE_CHAIN_END_UNSEEN : 0, 50'000'000, kT1),
         RelayWriter::relay(0, chain ? OFFWAKE_CHAIN_END_IRQ : 0, 70'000'000, kT2)},
        [](size_t aggregate, size_t sample) { return aggregate == 0 || sample == 0; });
    auto stdio = test::run(kOffwake + " report --stdio -i " + data);
    ASSERT_EQ(stdio.status, 0) << stdio.err;
    EXPECT_NE(stdio.out.find("# Warning: 1 blocked samples without a waker sample (the recording ends inside them)\n"),
              std::string::npos)
        << stdio.out;
    EXPECT_NE(stdio.out.find("woken by [unknown waker]"), std::string::npos) << stdio.out;
    EXPECT_NE(stdio.out.find("# off-CPU: 120.00 ms in 4 blocks"), std::string::npos) << stdio.out;
    auto perf = test::run(std::string(test::kDebianPerf) + " script -i " + data + " -s " + kCollapse);
    ASSERT_EQ(perf.status, 0) << perf.err;
    EXPECT_NE(perf.err.find("offwake-collapse: 1 blocked samples without a waker sample"), std::string::npos)
        << perf.err;
    // A whole recording has none.
    const std::string whole = w.write("whole.data", chain, {RelayWriter::relay(0, 0, 50'000'000, kT1)});
    auto fine = test::run(kOffwake + " report --stdio -i " + whole);
    ASSERT_EQ(fine.status, 0) << fine.err;
    EXPECT_EQ(fine.out.find("Warning"), std::string::npos) << fine.out;
  }
}

// --chain-depth 1: no hop events in the file, the offwake-time raw data's chain field 0, and
// every reader's output what it always was.
TEST(ChainsDepthOne, OutputIsTodays) {
  RelayWriter w;
  ASSERT_TRUE(w.build_table());
  const std::string data = w.write("depth1.data", false, {RelayWriter::relay(0, 0, 300'000'000, kT1)});
  // What offwake-collapse.py of commit 99156bf (before the readers knew chains) prints for this
  // recording under Debian's perf.
  const std::string golden =
      "relay3;main;st_middle;st_leaf;do_syscall_64;ksys_read;vfs_read;--;__wake_up_sync_key;vfs_write;ksys_write;"
      "st_middle;main;relay2 300000000\n";
  auto folded = test::run(kOffwake + " report --folded -i " + data);
  ASSERT_EQ(folded.status, 0) << folded.err;
  EXPECT_EQ(folded.out, golden);
  auto perf = test::run(std::string(test::kDebianPerf) + " script -i " + data + " -s " + kCollapse);
  ASSERT_EQ(perf.status, 0) << perf.err;
  EXPECT_EQ(perf.out, golden);
  auto stdio = test::run(kOffwake + " report --stdio -i " + data);
  EXPECT_EQ(stdio.out.find("hop "), std::string::npos) << stdio.out;
  EXPECT_EQ(stdio.out.find("chain ends"), std::string::npos) << stdio.out;
  auto header = test::run(std::string(test::kDebianPerf) + " report --header-only -i " + data);
  EXPECT_EQ(header.out.find("offwake-hop"), std::string::npos) << header.out;
  const std::string printer = w.dir.file("keys.py");
  std::ofstream(printer) << R"(
import struct
def process_event(d):
    if d["ev_name"] == "offwake-time":
        print(sorted(k for k in d if k.startswith("chain")), struct.unpack_from("<I", d["raw_buf"], 28)[0])
)";
  auto keys = test::run(kOffwake + " script -i " + data + " -s " + printer);
  ASSERT_EQ(keys.status, 0) << keys.err;
  EXPECT_EQ(keys.out, "[] 0\n");
}

}  // namespace
}  // namespace offwake
