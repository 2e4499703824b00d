// The BPF programs of every mode load on this kernel, and with room to spare: the verifier
// stops a program at a million instructions processed, and how many it processes depends on
// the kernel as well as on the code (on 2026-12-03 a kernel of this kind took the waking
// program, with unwind tables, past the limit, and the recorder fell back to the tracepoint
// back end). Each program must stay below a quarter of the limit here, so that a change that
// makes verification grow fails this test before it fails a user's kernel.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "support/paths.h"
#include "support/run.h"

namespace offwake::test {
namespace {

constexpr long kVerifierLimit = 1'000'000;
constexpr long kMargin = 4;

struct Mode {
  std::string options;
  std::vector<std::string> programs;  // programs that must load in this mode
};

TEST(Verifier, EveryModesProgramsLoadFarBelowTheLimit) {
  TempDir dir;
  const std::vector<Mode> modes = {
      {"", {"offwake_switch", "offwake_waking", "offwake_rseq_return", "offwake_end_blocks"}},
      {"--sample-period 1000", {"offwake_switch", "offwake_waking", "offwake_rseq_return", "offwake_end_blocks"}},
      {"--min-block 100 --timeline --chain-depth 4", {"offwake_switch", "offwake_waking", "offwake_rseq_return"}},
      {"--user-walker fp", {"offwake_switch", "offwake_waking"}},
      {"--check-replays --sched-frames", {"offwake_switch", "offwake_waking"}},
  };
  const std::regex line(R"(BPF program (\w+): verifier processed (\d+) insns)");
  for (const Mode& m : modes) {
    SCOPED_TRACE(m.options);
    auto r = run(kOffwake + " record -v --backend bpf -a " + m.options + " -o " + dir.file("perf.data") + " -- true");
    ASSERT_EQ(r.status, 0) << r.err;
    std::set<std::string> seen;
    for (std::sregex_iterator it(r.err.begin(), r.err.end(), line), end; it != end; ++it) {
      const std::string name = (*it)[1];
      const long processed = std::stol((*it)[2]);
      seen.insert(name);
      EXPECT_LT(processed * kMargin, kVerifierLimit) << name << ": " << processed << " instructions processed";
    }
    for (const std::string& p : m.programs) EXPECT_TRUE(seen.count(p)) << p << " not loaded:\n" << r.err;
  }
}

}  // namespace
}  // namespace offwake::test
