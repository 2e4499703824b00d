// The offwake-time samples of a recording with their block counts and longest blocks, as
// Debian's perf reads them (support/raw_blocks.py decodes the RAW payload): the count and
// the maximum come from perf's reader, not ours, so a test can hold them against a workload's
// own truth next to the time.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "support/perf_script.h"
#include "support/run.h"

namespace offwake::test {

struct RawBlock {
  uint32_t tid = 0;
  uint64_t period = 0;  // ns blocked, summed over `count` blocks
  uint32_t state = 0;   // the state at switch-out (0x1 S, 0x2 D, 0x402 I: offwake_block_state)
  uint64_t count = 0, max_ns = 0;
  std::vector<std::string> syms;  // the callchain, leaf first; empty if it has none
  bool has(const std::string& sym) const { return std::find(syms.begin(), syms.end(), sym) != syms.end(); }
};

// Every offwake-time sample of `data`; a line that does not parse fails the test.
inline std::vector<RawBlock> raw_blocks(const std::string& data) {
  auto r = run(std::string(kDebianPerf) + " script -i " + data + " -s " OFFWAKE_TESTS_DIR "/support/raw_blocks.py");
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<RawBlock> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    RawBlock b;
    std::string syms;
    if (!(f >> b.tid >> b.period >> b.state >> b.count >> b.max_ns >> syms)) {
      ADD_FAILURE() << "raw_blocks.py printed: " << line;
      continue;
    }
    if (syms != "-")
      for (std::istringstream s(syms); std::getline(s, line, ',');) b.syms.push_back(line);
    out.push_back(std::move(b));
  }
  return out;
}

// The samples of thread `tid` whose stack holds `sym`, summed.
struct RawSum {
  uint64_t ns = 0, count = 0, max_ns = 0, samples = 0;
};
inline RawSum raw_sum(const std::vector<RawBlock>& blocks, uint32_t tid, const std::string& sym) {
  RawSum s;
  for (const RawBlock& b : blocks) {
    if (b.tid != tid || !b.has(sym)) continue;
    s.ns += b.period;
    s.count += b.count;
    s.max_ns = std::max(s.max_ns, b.max_ns);
    ++s.samples;
  }
  return s;
}

}  // namespace offwake::test
