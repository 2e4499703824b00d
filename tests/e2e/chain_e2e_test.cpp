// Wakeup chains end to end: perf offwake record --chain-depth on wl_relay (three processes
// relaying through two pipes, see tests/workloads/wl_relay.c), read back by the real perf.
// Every block of relay-third must carry the whole relay: relay-second's write, its blocked
// read, relay-first's write, relay-first's nap, and the timer interrupt that ended the nap.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "offwake.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "support/tolerances.h"
#include "support/truth.h"
#include "support/usage_error.h"

namespace offwake::test {
namespace {

const std::string kRelay = kWorkloads + "wl_relay";

struct Recorded {
  TempDir dir;
  RunResult record;
  Relay relay;
  std::string data;
};

void record_relay(Recorded& r, const std::string& options) {
  r.data = r.dir.file("perf.data");
  r.record = run(kOffwake + " record -q -o " + r.data + " " + options + " -- " + kRelay + " -n 20 -m 20");
  ASSERT_EQ(r.record.status, 0) << r.record.err;
  r.relay = parse_relay(r.record.out);
  ASSERT_TRUE(r.relay.first && r.relay.second && r.relay.third) << r.record.out;
  ASSERT_EQ(r.relay.third_truth.function, "wl_relay_wait_pass") << r.record.out;
}

// One sample of a chain as perf script shows it: the event, the thread, a function its stack
// must hold (empty: the comm must be `comm`).
struct Expected {
  const char* event;
  uint32_t tid;
  const char* function;
  const char* comm = "";
};

// relay-third's blocks in wl_relay_wait_pass: their number (from the raw payloads), their
// time, and the part of it whose samples are followed by exactly `chain`.
struct ThirdTime {
  uint64_t blocks = 0, all = 0, whole = 0;
};

// All of the time within 5% of the workload's measure (kBlockedTimeTolerance), at least 90%
// with the whole chain (kWholeChainShare): see support/tolerances.h. The blocks exactly as many.
ThirdTime third_time(const std::vector<ScriptSample>& samples, const Relay& r, const std::vector<Expected>& chain) {
  uint64_t all = 0, whole = 0, blocks = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const ScriptSample& s = samples[i];
    if (s.event != "offwake-time" || s.tid != r.third || !s.has_frame("wl_relay_wait_pass")) continue;
    all += s.period;
    blocks += s.blocks;
    bool ok = true;
    for (size_t k = 0; ok && k < chain.size(); ++k) {
      if (i + 1 + k >= samples.size()) {
        ok = false;
        break;
      }
      const ScriptSample& h = samples[i + 1 + k];
      const Expected& e = chain[k];
      ok = h.event == e.event && h.period == s.period &&
           (*e.function ? h.tid == e.tid && h.has_frame(e.function) : h.comm == e.comm);
    }
    // Nothing more of this chain after it.
    if (ok && i + 1 + chain.size() < samples.size())
      ok = samples[i + 1 + chain.size()].event.rfind("offwake-hop-", 0) != 0;
    if (ok) whole += s.period;
  }
  return {blocks, all, whole};
}

void expect_chain(const std::string& perf, const Recorded& r, const std::vector<Expected>& chain) {
  SCOPED_TRACE(perf);
  // The relay's tids and truth are the workload's own, never 0 (a truth read from the wrong
  // stream would make every comparison below 0 against 0).
  ASSERT_TRUE(r.relay.first && r.relay.second && r.relay.third) << "no relay line";
  ASSERT_EQ(r.relay.third_truth.function, "wl_relay_wait_pass") << "no truth line for relay-third";
  ASSERT_GT(r.relay.third_truth.count, 0u);
  RunResult script = run(perf + " script " + kPerfScriptFields + " -i " + r.data);
  ASSERT_EQ(script.status, 0) << script.err;
  auto samples = parse_perf_script(script.out);
  add_block_counts(samples, r.data);
  auto [blocks, all, whole] = third_time(samples, r.relay, chain);
  const double truth = static_cast<double>(r.relay.third_truth.blocked_ns);
  EXPECT_EQ(blocks, r.relay.third_truth.count) << "relay-third's blocks against the workload's count";
  // The workload times its read() from user space: a few microseconds more than the block.
  EXPECT_NEAR(static_cast<double>(all), truth, kBlockedTimeTolerance * truth);
  EXPECT_GE(static_cast<double>(whole), kWholeChainShare * truth) << "of " << all << " ns blocked\n"
                                                                  << script.out.substr(0, 6000);
}

std::vector<Expected> relay_chain(const Relay& r, int depth) {
  std::vector<Expected> c = {{"offwake-waker", r.second, "wl_relay_pass"}};
  if (depth >= 2) {
    c.push_back({"offwake-hop-blocked", r.second, "wl_relay_wait_kick"});
    c.push_back({"offwake-hop-waker", r.first, "wl_relay_kick"});
  }
  if (depth >= 3) {
    c.push_back({"offwake-hop-blocked", r.first, "wl_relay_nap"});
    c.push_back({"offwake-hop-waker", 0, "", "[hardirq]"});
  }
  return c;
}

TEST(ChainE2E, PerfScriptShowsTheWholeRelayAfterTheBlockedSample) {
  Recorded r;
  ASSERT_NO_FATAL_FAILURE(record_relay(r, "--chain-depth 3"));
  expect_chain(kDebianPerf, r, relay_chain(r.relay, 3));
  expect_chain(perf612_path(), r, relay_chain(r.relay, 3));
}

// The chain stops at the depth asked for; deeper asks end at the interrupt all the same, up to
// the deepest there is (whose programs the verifier once refused: a task's latest block had no
// room for a whole chain behind its own hop).
TEST(ChainE2E, DepthLimitsTheChain) {
  for (int depth : {2, 5, OFFWAKE_MAX_CHAIN_DEPTH}) {
    Recorded r;
    ASSERT_NO_FATAL_FAILURE(record_relay(r, "--chain-depth " + std::to_string(depth)));
    expect_chain(kDebianPerf, r, relay_chain(r.relay, depth));
  }
}

// Depth 1 (the default) is the recording it always was: no hop events at all.
TEST(ChainE2E, DepthOneHasNoHopEvents) {
  Recorded r;
  ASSERT_NO_FATAL_FAILURE(record_relay(r, ""));
  expect_chain(kDebianPerf, r, relay_chain(r.relay, 1));
  RunResult events = run(std::string(kDebianPerf) + " evlist -i " + r.data);
  ASSERT_EQ(events.status, 0) << events.err;
  EXPECT_EQ(events.out.find("offwake-hop"), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("offwake-waker"), std::string::npos) << events.out;
}

// Through a pipe and one block at a time (--timeline), the chain is the same.
TEST(ChainE2E, PipeAndTimelineCarryTheChain) {
  for (const char* options : {"--timeline", "--min-block 1000"}) {
    Recorded r;
    ASSERT_NO_FATAL_FAILURE(record_relay(r, std::string("--chain-depth 3 ") + options));
    expect_chain(kDebianPerf, r, relay_chain(r.relay, 3));
  }
  TempDir dir;
  const std::string data = dir.file("piped.data");
  RunResult piped = run(kOffwake + " record -q --chain-depth 3 -o - -- " + kRelay + " -n 20 -m 20 > " + data);
  ASSERT_EQ(piped.status, 0) << piped.err;
  Recorded r;
  r.relay = parse_relay(piped.err);  // with -o -, the workload's standard output goes to stderr
  r.data = data;
  expect_chain(kDebianPerf, r, relay_chain(r.relay, 3));
}

// The relay's chain in a folded line (perf offwake report --folded, offwake-collapse.py): its
// stacks, one "--" between every two, in the order the chain goes, ending with the timer.
bool whole_relay(const std::string& line) {
  const char* stacks[] = {"wl_relay_wait_pass", "wl_relay_pass", "wl_relay_wait_kick", "wl_relay_kick",
                          "wl_relay_nap", "hrtimer_wakeup"};
  std::vector<std::string> parts;
  size_t from = 0, at;
  while ((at = line.find(";--;", from)) != std::string::npos) {
    parts.push_back(line.substr(from, at - from));
    from = at + 4;
  }
  parts.push_back(line.substr(from));
  if (parts.size() != std::size(stacks)) return false;
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i].find(std::string(";") + stacks[i] + ";") == std::string::npos) return false;
  return parts.back().find(";[hardirq] ") != std::string::npos;
}

// relay-third's nanoseconds in folded lines: all, and with the whole relay.
std::pair<uint64_t, uint64_t> folded_third(const std::string& folded) {
  uint64_t all = 0, whole = 0;
  std::istringstream lines(folded);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("relay-third;", 0) != 0 || line.find(";wl_relay_wait_pass;") == std::string::npos) continue;
    const uint64_t ns = std::stoull(line.substr(line.rfind(' ') + 1));
    all += ns;
    if (whole_relay(line)) whole += ns;
  }
  return {all, whole};
}

void expect_folded(const std::string& what, const std::string& folded, const Relay& r) {
  SCOPED_TRACE(what);
  auto [all, whole] = folded_third(folded);
  const double truth = static_cast<double>(r.third_truth.blocked_ns);
  EXPECT_NEAR(static_cast<double>(all), truth, kBlockedTimeTolerance * truth);
  EXPECT_GE(static_cast<double>(whole), kWholeChainShare * truth) << folded.substr(0, 4000);
}

TEST(ChainE2E, FoldedLinesAndParamDictShowTheWholeRelay) {
  Recorded r;
  ASSERT_NO_FATAL_FAILURE(record_relay(r, "--chain-depth 3"));
  RunResult report = run(kOffwake + " report --folded -i " + r.data);
  ASSERT_EQ(report.status, 0) << report.err;
  expect_folded("perf offwake report --folded", report.out, r.relay);
  RunResult collapse =
      run(std::string(kDebianPerf) + " script -i " + r.data + " -s " + OFFWAKE_SOURCE_DIR "/scripts/offwake-collapse.py");
  ASSERT_EQ(collapse.status, 0) << collapse.err;
  expect_folded("Debian perf script -s offwake-collapse.py", collapse.out, r.relay);
  EXPECT_EQ(collapse.out, report.out);

  // param_dict['chain'] of relay-third's blocks: hop by hop, the thread and the workload's
  // function in each stack.
  TempDir dir;
  const std::string script = dir.file("chain.py");
  std::ofstream(script) << R"(
def fn(callchain):
    for f in callchain:
        name = f.get('sym', {}).get('name', '')
        if name.startswith('wl_relay') or name == 'hrtimer_wakeup':
            return name
    return '?'

def process_event(d):
    if d['ev_name'] != 'offwake-time' or d['comm'] != 'relay-third' or fn(d['callchain']) != 'wl_relay_wait_pass':
        return
    hops = []
    for h in d['chain']:
        b = h.get('blocked')
        if b:
            hops.append('%d:%s:%s' % (b['tid'], b['state'], fn(b['callchain'])))
        hops.append('%d:%s:%s:%s' % (h['tid'], h['context'], fn(h['callchain']), h['end']))
    print(d['sample']['period'], d['count'], d['chain_end'], ' '.join(hops))
)";
  RunResult dicts = run(kOffwake + " script -i " + r.data + " -s " + script);
  ASSERT_EQ(dicts.status, 0) << dicts.err;
  const Relay& rl = r.relay;
  const std::string want = "interrupt " + std::to_string(rl.second) + ":thread:wl_relay_pass:None " +
                           std::to_string(rl.second) + ":S:wl_relay_wait_kick " + std::to_string(rl.first) +
                           ":thread:wl_relay_kick:None " + std::to_string(rl.first) + ":S:wl_relay_nap " +
                           "2147483632:hardirq:hrtimer_wakeup:interrupt";
  uint64_t all = 0, whole = 0, blocks = 0;
  std::istringstream lines(dicts.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    uint64_t ns = 0, count = 0;
    if (!(f >> ns >> count)) continue;
    all += ns;
    blocks += count;
    std::string rest;
    std::getline(f >> std::ws, rest);
    if (rest == want) whole += ns;
  }
  const double truth = static_cast<double>(rl.third_truth.blocked_ns);
  EXPECT_EQ(blocks, rl.third_truth.count) << "relay-third's blocks (param_dict['count']) against the workload's\n"
                                          << dicts.out;
  EXPECT_NEAR(static_cast<double>(all), truth, kBlockedTimeTolerance * truth);
  EXPECT_GE(static_cast<double>(whole), kWholeChainShare * truth) << "want: " << want << "\n" << dicts.out;
}

TEST(ChainE2E, BadDepthIsAUsageError) {
  for (const char* bad : {"0", "8", "9", "x", "-1"}) {
    RunResult r = run(kOffwake + " record --chain-depth " + bad + " -- true");
    SCOPED_TRACE(bad);
    // 0, 8 and 9 are refused by our check after the parse, x and -1 by the parse (libsubcmd).
    expect_usage_error(r, std::string(bad) == "x" || std::string(bad) == "-1" ? "option `chain-depth'" : "--chain-depth",
                       "record");
  }
}

}  // namespace
}  // namespace offwake::test
