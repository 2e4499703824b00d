// The "block" lines of a workload that prints each of its blocks as it measured it
// (tests/workloads/wl_lengths.c):
//   block tid=T function=F ns=N
// and what a filter or a table row should show of them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace offwake::test {

struct BlockTruth {
  uint32_t tid = 0;
  std::string function;
  uint64_t ns = 0;
};

inline std::vector<BlockTruth> parse_block_truth(const std::string& text) {
  std::vector<BlockTruth> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("block ", 0) != 0) continue;
    BlockTruth b;
    std::istringstream f(line.substr(6));
    for (std::string kv; f >> kv;) {
      const auto eq = kv.find('=');
      const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "tid") b.tid = static_cast<uint32_t>(std::stoul(v));
      else if (k == "function") b.function = v;
      else if (k == "ns") b.ns = std::stoull(v);
    }
    out.push_back(b);
  }
  return out;
}

// The blocks of `function` that `keep` keeps: their total, count, and longest.
struct BlockSum {
  uint64_t ns = 0, count = 0, max_ns = 0;
};
inline BlockSum sum_blocks(const std::vector<BlockTruth>& blocks, const std::string& function,
                           const std::function<bool(uint64_t ns)>& keep = {}) {
  BlockSum s;
  for (const BlockTruth& b : blocks) {
    if (b.function != function || (keep && !keep(b.ns))) continue;
    s.ns += b.ns;
    ++s.count;
    s.max_ns = std::max(s.max_ns, b.ns);
  }
  return s;
}

}  // namespace offwake::test
