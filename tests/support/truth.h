// What the test workloads print about themselves (tests/workloads/wl_common.h): the "truth"
// line of their own measurement, the "identity" line of a thread that changes who it is, and
// wl_relay's "relay" line. A line that lacks one of its fields is a test failure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace offwake::test {

// "truth tid=T function=F blocked_ns=N count=C waker_tid=W waker_function=G": thread T
// blocked C times in F, N ns in all, woken by W in G (W=0 with G=[hardirq]: an interrupt).
struct Truth {
  uint32_t tid = 0, waker_tid = 0;
  std::string function, waker_function;
  uint64_t blocked_ns = 0, count = 0;
};
// Every truth line of `text`, in order.
std::vector<Truth> parse_truth(const std::string& text);

// "identity tid=T comm=C from_ns=A to_ns=B": thread T had the name C (and its binary) over
// at least [A, B], CLOCK_MONOTONIC, the clock of our perf.data timestamps.
struct Identity {
  uint32_t tid = 0;
  std::string comm;
  uint64_t from_ns = 0, to_ns = 0;
};
std::vector<Identity> parse_identity(const std::string& text);

// "relay first=A second=B third=C" (tests/workloads/wl_relay.c): the three processes of the
// relay, 0 where the line is missing, and relay-third's truth line (tid 0 where it printed
// none).
struct Relay {
  uint32_t first = 0, second = 0, third = 0;
  Truth third_truth;
};
Relay parse_relay(const std::string& text);

}  // namespace offwake::test
