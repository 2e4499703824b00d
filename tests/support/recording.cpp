#include "support/recording.h"

#include <gtest/gtest.h>

#include <map>

#include "support/paths.h"
#include "support/truth.h"

namespace offwake::test {

const Recording& recording(const std::string& workload, const std::string& options) {
  static std::map<std::string, Recording> cache;
  const std::string key = workload + "|" + options;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Recording& r = cache[key];
  r.data = r.dir->file("perf.data");
  r.record = run(kOffwake + " record " + options + " -o " + r.data + " -- " + kWorkloads + workload);
  auto truths = parse_truth(r.record.out);
  if (truths.size() == 1) r.truth = truths[0];
  return r;
}

void SleeperAndWaiter::expect_recorded() const {
  EXPECT_EQ(record.status, 0) << record.err;
  EXPECT_EQ(sleeper.function, "wl_sleep_for") << record.out;
  EXPECT_EQ(waiter.function, "wl_wait_for_signal") << record.out;
}

SleeperAndWaiter record_sleeper_and_waiter(const std::string& data, const std::string& options, bool pinned) {
  const std::string sleep = (pinned ? "taskset -c 0 " : "") + kWorkloads + "wl_sleep -n 20 -m 10";
  const std::string condvar = (pinned ? "taskset -c 1 " : "") + kWorkloads + "wl_condvar -n 20 -m 10";
  SleeperAndWaiter two;
  two.record = run(kOffwake + " record " + options + " -o " + data + " -- sh -c '" + sleep + " & " + condvar + "; wait'");
  for (const Truth& t : parse_truth(two.record.out)) (t.function == "wl_sleep_for" ? two.sleeper : two.waiter) = t;
  return two;
}

}  // namespace offwake::test
