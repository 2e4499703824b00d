// Synthetic flame stacks for the flame graph tests, and what the graph should say about them.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "report/flamegraph.h"

namespace offwake::test {

using report::FlameFrame;
using report::FlameKind;
using report::FlameStack;

inline FlameFrame T(const std::string& n) { return {n, FlameKind::kThread}; }
inline FlameFrame U(const std::string& n) { return {n, FlameKind::kUser}; }
inline FlameFrame K(const std::string& n) { return {n, FlameKind::kKernel}; }
inline FlameFrame S() { return {"--", FlameKind::kSeparator}; }
inline FlameFrame WK(const std::string& n) { return {n, FlameKind::kWakerKernel}; }
inline FlameFrame WU(const std::string& n) { return {n, FlameKind::kWakerUser}; }
inline FlameFrame WT(const std::string& n) { return {n, FlameKind::kWakerThread}; }

// Two blocked threads, three kinds of waker, every kind of an off-wake graph, in ms:
//   app    main wait_reply sys_read pipe_read -- try_to_wake_up pipe_write send_reply  server  600
//   app    main wait_lock futex_wait          -- try_to_wake_up futex_wake unlock      worker  250
//   app    main sleep_ms hrtimer_nanosleep    -- hrtimer_wakeup                        [hardirq] 100
//   logger main write_log io_schedule         -- blk_mq_complete                       [softirq]  50
inline std::vector<FlameStack> offwake_example() {
  constexpr uint64_t ms = 1000000;
  return {
      {{T("app"), U("main"), U("wait_reply"), K("sys_read"), K("pipe_read"), S(), WK("try_to_wake_up"),
        WK("pipe_write"), WU("send_reply"), WT("server")},
       600 * ms},
      {{T("app"), U("main"), U("wait_lock"), K("futex_wait"), S(), WK("try_to_wake_up"), WK("futex_wake"),
        WU("unlock"), WT("worker")},
       250 * ms},
      {{T("app"), U("main"), U("sleep_ms"), K("hrtimer_nanosleep"), S(), WK("hrtimer_wakeup"), WT("[hardirq]")},
       100 * ms},
      {{T("logger"), U("main"), U("write_log"), K("io_schedule"), S(), WK("blk_mq_complete"), WT("[softirq]")},
       50 * ms},
  };
}

// The share (percent) of the total in stacks with a frame that matches `pattern`, each stack
// counted once: what a search must report.
inline double expected_share(const std::vector<FlameStack>& stacks, const std::string& pattern) {
  const std::regex re(pattern, std::regex::ECMAScript);
  double matched = 0, total = 0;
  for (const FlameStack& s : stacks) {
    total += static_cast<double>(s.value);
    for (const FlameFrame& f : s.frames)
      if (std::regex_search(f.name, re)) {
        matched += static_cast<double>(s.value);
        break;
      }
  }
  return total ? 100 * matched / total : 0;
}

}  // namespace offwake::test
