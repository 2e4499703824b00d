// The end of a recording, through perf offwake record: a block still open at the stop is
// counted up to the stop, no further. The stop is when the BPF programs stop recording, not
// when perf offwake has finished detaching them (lazily that takes a 20 ms grace for parked
// user stacks: a stop taken after it made the open block 20 ms too long, and a block that
// ended meanwhile "[still blocked]", with no waker).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "support/tolerances.h"
#include "support/truth.h"

namespace offwake::test {
namespace {

const std::string kSleep = kWorkloads + "wl_sleep";

// Recorded against the workload's own measurement: a block is switch-out to switch-in, inside
// the workload's clock reads around the system call; 0.5 ms allows for a virtual CPU that is
// taken away between the two.
constexpr uint64_t kPerBlockNs = 500'000;

// "naps shortest_ns=A longest_ns=B" from the timer workloads (the last nap of -l may be cut
// short by the SIGUSR1 that ends them).
uint64_t nap_field(const std::string& out, const std::string& key) {
  const auto at = out.find(key + "=", out.find("naps "));
  return at == std::string::npos ? 0 : std::stoull(out.substr(at + key.size() + 1));
}

// "nap start_ns=A end_ns=B" lines (the timer workloads' -l), in order.
std::vector<std::pair<uint64_t, uint64_t>> nap_spans(const std::string& out) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("nap start_ns=", 0) != 0) continue;
    const auto end_at = line.find("end_ns=");
    spans.emplace_back(std::stoull(line.substr(13)), std::stoull(line.substr(end_at + 7)));
  }
  return spans;
}

// A process napping 3 ms at a time, recorded with -p PID --duration 0.5 and --min-block 1000
// (lazy capture): every block is at most as long as the nap it lies in, as the workload timed
// it (-l); each has the timer as its waker but the one open at the stop; and there is one
// block per nap, over about 0.5 s.
TEST(Stop, OpenBlocksEndAtTheStopNotAfterTheDetaching) {
  TempDir dir;
  const std::string data = dir.file("stop.data"), out = dir.file("wl.out"), err = dir.file("rec.err");
  // Naps until the recording is over (SIGUSR1): a loaded machine can take seconds to start it.
  auto r = run(kSleep + " -n 100000 -m 3 -l > " + out + " & wl=$!; " + kOffwake + " record -p $wl --duration 0.5 " +
               "--timeline --min-block 1000 -o " + data + " 2> " + err + "; status=$?; kill -USR1 $wl; wait $wl; " +
               "exit $((status | $?))");
  const std::string rec_err = read_file(err), wl_out = read_file(out);
  ASSERT_EQ(r.status, 0) << rec_err << r.err;
  auto truths = parse_truth(wl_out);
  ASSERT_EQ(truths.size(), 1u) << wl_out;
  const Truth& t = truths[0];
  const uint64_t longest = nap_field(wl_out, "longest_ns");
  ASSERT_GT(longest, 3'000'000u) << wl_out;
  const auto spans = nap_spans(wl_out);
  ASSERT_EQ(spans.size(), t.count);
  // The nap a sample's time (its wakeup, or its start when it has no waker) lies in.
  auto nap_at = [&](uint64_t time) -> const std::pair<uint64_t, uint64_t>* {
    auto it = std::upper_bound(spans.begin(), spans.end(), std::make_pair(time, UINT64_MAX));
    if (it == spans.begin()) return nullptr;
    --it;
    return time <= it->second + kPerBlockNs ? &*it : nullptr;
  };
  auto script = run(std::string("perf script ") + kPerfScriptTimedFields + " -i " + data);
  ASSERT_EQ(script.status, 0) << script.err;
  auto samples = parse_perf_script(script.out);
  uint64_t blocks = 0, timer = 0, still = 0, unseen = 0;
  std::vector<int> per_nap(spans.size());
  std::string wrong;
  for (size_t i = 0; i + 1 < samples.size(); ++i) {
    if (samples[i].event != "offwake-time" || samples[i].tid != t.tid) continue;
    ++blocks;
    const std::string& waker = samples[i + 1].comm;
    const auto* nap = nap_at(samples[i].time_ns);
    if (nap) ++per_nap[nap - spans.data()];
    if (!nap || samples[i].period > nap->second - nap->first + kPerBlockNs)
      wrong += "\n  " + std::to_string(samples[i].period) + " ns at " + std::to_string(samples[i].time_ns) +
               ", waker " + waker + (nap ? ", nap of " + std::to_string(nap->second - nap->first) + " ns" : ", no nap");
    timer += waker == "[hardirq]";
    still += waker == "[still blocked]";
    unseen += waker == "[no waker seen]";
  }
  EXPECT_EQ(wrong, "") << "blocks longer than their nap:" << wrong << "\n" << rec_err;
  // One block can be open at the stop. A wakeup the kernel hid (this VM runs no BPF program
  // while its init process is on the CPU) may leave a block without its waker, as rarely as
  // the naps allow (test::max_missed_blocks).
  EXPECT_LE(still, 1u) << script.out;
  EXPECT_EQ(timer + still + unseen, blocks) << script.out;
  // One block per nap, for every nap from the first recorded to the last (a block the kernel
  // hid entirely, as rarely as the naps allow), and about 0.5 s of them.
  const auto first = std::find_if(per_nap.begin(), per_nap.end(), [](int n) { return n > 0; });
  const auto last = std::find_if(per_nap.rbegin(), per_nap.rend(), [](int n) { return n > 0; });
  ASSERT_NE(first, per_nap.end()) << script.out;
  const uint64_t naps = static_cast<uint64_t>(per_nap.rend() - last) - static_cast<uint64_t>(first - per_nap.begin());
  EXPECT_EQ(*std::max_element(per_nap.begin(), per_nap.end()), 1) << "a nap recorded twice";
  EXPECT_LE(blocks, naps);
  EXPECT_LE(unseen, test::max_missed_blocks(naps)) << script.out;
  EXPECT_LE(naps - blocks, test::max_missed_blocks(naps)) << naps << " naps from the first recorded to the last";
  const uint64_t covered = spans[per_nap.rend() - last - 1].second - spans[first - per_nap.begin()].first;
  EXPECT_LE(covered, 500'000'000u + 2 * longest) << rec_err;
}

}  // namespace
}  // namespace offwake::test
