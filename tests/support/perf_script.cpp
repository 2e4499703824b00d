#include "support/perf_script.h"

#include <gtest/gtest.h>

#include <deque>
#include <sstream>

#include "support/raw_blocks.h"
#include "support/run.h"

namespace offwake::test {

bool ScriptSample::has_frame(const std::string& sym) const {
  for (const auto& f : frames)
    if (f.sym == sym) return true;
  return false;
}

bool ScriptSample::has_user_frames() const {
  for (const auto& f : frames)
    if (!f.kernel()) return true;
  return false;
}

bool ScriptSample::has_kernel_frames() const {
  for (const auto& f : frames)
    if (f.kernel()) return true;
  return false;
}

const ScriptFrame* ScriptSample::user_leaf() const {
  for (const auto& f : frames)
    if (!f.kernel()) return &f;
  return nullptr;
}

// "12345.678901234:" as nanoseconds; false if it is not a time.
static bool parse_time(const std::string& t, uint64_t& ns) {
  auto dot = t.find('.');
  if (t.size() < 3 || t.back() != ':' || dot == std::string::npos || dot == 0) return false;
  std::string sec = t.substr(0, dot), frac = t.substr(dot + 1, t.size() - dot - 2);
  if (frac.empty() || frac.size() > 9 || sec.find_first_not_of("0123456789") != std::string::npos ||
      frac.find_first_not_of("0123456789") != std::string::npos)
    return false;
  frac.append(9 - frac.size(), '0');
  ns = std::stoull(sec) * 1'000'000'000ull + std::stoull(frac);
  return true;
}

std::vector<ScriptSample> parse_perf_script(const std::string& text) {
  std::vector<ScriptSample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '\t' || line[0] == ' ') {
      if (out.empty()) continue;
      std::istringstream f(line);
      ScriptFrame frame;
      std::string ip;
      f >> ip;
      if (ip.empty() || ip.find_first_not_of("0123456789abcdef") != std::string::npos) continue;  // e.g. "BPF output:"
      frame.ip = std::stoull(ip, nullptr, 16);
      std::getline(f >> std::ws, frame.sym);
      out.back().frames.push_back(frame);
      continue;
    }
    // "comm with spaces  PID/TID  [TIME:]  PERIOD  event:" read from the right.
    std::vector<std::string> tok;
    std::istringstream h(line);
    for (std::string t; h >> t;) tok.push_back(t);
    if (tok.size() < 4 || tok.back().back() != ':') continue;
    ScriptSample s;
    s.event = tok.back().substr(0, tok.back().size() - 1);
    s.period = std::stoull(tok[tok.size() - 2]);
    size_t at = tok.size() - 3;  // PID/TID, or the time before it
    if (at > 0 && parse_time(tok[at], s.time_ns)) {
      s.has_time = true;
      --at;
    }
    const std::string& ids = tok[at];
    auto slash = ids.find('/');
    s.pid = static_cast<uint32_t>(std::stoul(ids.substr(0, slash)));
    s.tid = static_cast<uint32_t>(std::stoul(ids.substr(slash + 1)));
    for (size_t i = 0; i < at; ++i) s.comm += (i ? " " : "") + tok[i];
    out.push_back(std::move(s));
  }
  return out;
}

void add_block_counts(std::vector<ScriptSample>& samples, const std::string& data) {
  std::map<std::pair<uint32_t, uint64_t>, std::deque<uint64_t>> counts;  // (tid, period) -> counts in order
  const std::vector<RawBlock> printed = raw_blocks(data);
  for (const RawBlock& b : printed) counts[{b.tid, b.period}].push_back(b.count);
  size_t given = 0;
  for (ScriptSample& s : samples) {
    if (s.event != "offwake-time") continue;
    auto it = counts.find({s.tid, s.period});
    EXPECT_TRUE(it != counts.end() && !it->second.empty())
        << "no raw payload printed for the offwake-time sample of " << s.tid << " with period " << s.period;
    if (it == counts.end() || it->second.empty()) continue;
    s.has_blocks = true;
    s.blocks = it->second.front();
    it->second.pop_front();
    ++given;
  }
  EXPECT_EQ(given, printed.size()) << "offwake-time samples in the payloads but not in perf script's text";
}

std::string perf612_path() { return OFFWAKE_DEPS_PREFIX "/perf-6.12/perf"; }

uint64_t summary_count(const std::string& record_stderr, const std::string& tail) {
  auto at = record_stderr.find(tail);
  if (at == std::string::npos) return 0;
  auto start = record_stderr.rfind(' ', at - 1);
  // The number may follow a parenthesis: "(3 no wakeup seen, ...".
  start = record_stderr.find_first_of("0123456789", start + 1);
  if (start == std::string::npos || start >= at) return 0;
  return std::stoull(record_stderr.substr(start, at - start));
}

uint64_t blocks_without_waker(const std::string& record_stderr) {
  return summary_count(record_stderr, " blocks without a waker");
}

uint64_t blocks_ended_late(const std::string& record_stderr) {
  return summary_count(record_stderr, " ended late");
}

}  // namespace offwake::test
