// Which processes a recording describes (COMM, FORK, MMAP2 read from /proc), read back by
// Debian's perf with --show-task-events. A recording of a command describes, as `perf record
// -- cmd` does, only the processes its samples name, not every process on the machine (hotspot
// counted all of them as the recording's processes and threads); a waker from outside the
// command is still named, with its functions, even when it exits before the recording ends.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "support/paths.h"
#include "support/perf_script.h"
#include "support/recording.h"
#include "support/run.h"

namespace offwake {
namespace {

using test::ScriptSample;

// The pids of the COMM, FORK and EXIT records, as perf script --show-task-events prints them;
// with `synthesized`, only of the COMM records perf dates 0.000000: those read from /proc, not
// reported by the kernel while recording.
std::set<uint32_t> described_pids(const std::string& data, bool synthesized) {
  auto r = test::run(std::string(test::kDebianPerf) + " script --show-task-events -F comm,pid,tid,time -i " + data +
                     " | grep PERF_RECORD_");
  EXPECT_EQ(r.status, 0) << r.err;
  std::set<uint32_t> pids;
  static const std::regex task(R"(\s(\d+)/\d+\s+(\d+\.\d+): PERF_RECORD_(COMM|FORK|EXIT))");
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, task)) continue;
    if (synthesized && (m[2] != "0.000000" || m[3] != "COMM")) continue;
    pids.insert(static_cast<uint32_t>(std::stoul(m[1])));
  }
  return pids;
}

std::vector<ScriptSample> script_samples(const std::string& data) {
  auto r = test::run(std::string(test::kDebianPerf) + " script " + test::kPerfScriptFields + " -i " + data);
  EXPECT_EQ(r.status, 0) << r.err;
  return test::parse_perf_script(r.out);
}

std::string pid_list(const std::set<uint32_t>& pids) {
  std::string s;
  for (uint32_t p : pids) s += std::to_string(p) + " ";
  return s;
}

TEST(DescribedProcesses, ACommandIsDescribedWithTheThreadsItsSamplesName) {
  const test::Recording& r = test::recording("wl_pipe", "");
  ASSERT_EQ(r.record.status, 0) << r.record.err;
  ASSERT_NE(r.truth.tid, 0u) << r.record.out;
  const std::vector<ScriptSample> samples = script_samples(r.data);
  ASSERT_FALSE(samples.empty());

  // The truth: wl_pipe's parent (the command perf offwake started) woke its child truth.count
  // times; the child was forked while recording, so the kernel reported it.
  const uint32_t parent = r.truth.waker_tid;
  std::set<uint32_t> named;  // every pid a sample names (blocked, waker)
  uint64_t child_blocks_woken_by_parent = 0;
  for (size_t i = 0; i + 1 < samples.size(); ++i) {
    const ScriptSample& s = samples[i];
    named.insert(s.pid);
    if (s.event != "offwake-time") continue;
    named.insert(samples[i + 1].pid);
    if (s.tid == r.truth.tid && samples[i + 1].tid == parent && s.has_frame(r.truth.function))
      child_blocks_woken_by_parent += s.period;
  }
  EXPECT_TRUE(named.count(parent)) << pid_list(named);
  EXPECT_TRUE(named.count(r.truth.tid)) << pid_list(named);
  EXPECT_GT(child_blocks_woken_by_parent, 0u);

  // Described: the command itself from /proc at the start, as perf record does, and only pids
  // that samples name (the pseudo-threads of interrupt wakers among them), whether read from
  // /proc or reported by the kernel while recording. Before, every process of the machine was,
  // and every process that started meanwhile.
  EXPECT_TRUE(described_pids(r.data, true).count(parent)) << pid_list(described_pids(r.data, true));
  for (uint32_t pid : described_pids(r.data, false))
    EXPECT_TRUE(named.count(pid)) << pid << " is described but no sample names it";

  // Every sample is still named and symbolized, by Debian's perf.
  for (const ScriptSample& s : samples) {
    EXPECT_NE(s.comm.rfind(":", 0), 0u) << s.comm << " " << s.pid;
    for (const auto& f : s.frames) EXPECT_NE(f.sym, "[unknown]") << s.comm << " " << s.event;
  }
}

// fifo_pipe_read, pipe_read: the name differs between kernels.
bool in_pipe_read(const ScriptSample& s) {
  for (const auto& f : s.frames)
    if (f.kernel() && f.sym.find("pipe_read") != std::string::npos) return true;
  return false;
}

// A command blocked on a FIFO that a process started before the recording writes, then exits
// while the command still runs: the waker's process is described from what /proc said at the
// start, by its name and its first user frame (libc's write).
TEST(DescribedProcesses, AWakerFromOutsideTheCommandIsNamedAfterItExits) {
  test::TempDir dir;
  const std::string fifo = dir.file("fifo"), data = dir.file("perf.data"), pidfile = dir.file("writer.pid");
  ASSERT_EQ(test::run("mkfifo " + fifo).status, 0);
  // The writer opens the FIFO once the command says it is about to read it, 200 ms later:
  // head is asleep in read() by then. fd 3 keeps the FIFO open, so that no open() waits.
  const std::string ready = dir.file("ready");
  auto rec = test::run("exec 3<>" + fifo + "; (while [ ! -e " + ready + " ]; do sleep 0.05; done; sleep 0.2; printf x >" +
                       fifo + ") & echo $! >" + pidfile + "; " + test::kOffwake + " record -o " + data +
                       " -- sh -c 'touch " + ready + "; head -c1 " + fifo + " >/dev/null; sleep 0.3'; exec 3>&-");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const uint32_t writer = static_cast<uint32_t>(std::stoul(test::read_file(pidfile)));

  const std::vector<ScriptSample> samples = script_samples(data);
  const ScriptSample* woken = nullptr;  // the waker sample of head's block on the FIFO
  for (size_t i = 0; i + 1 < samples.size(); ++i)
    if (samples[i].comm == "head" && in_pipe_read(samples[i]) && samples[i + 1].pid == writer)
      woken = &samples[i + 1];
  ASSERT_NE(woken, nullptr) << "no block of head in pipe_read woken by the writer " << writer;
  EXPECT_EQ(woken->comm, "bash");  // the subshell of test::run's bash that wrote
  ASSERT_NE(woken->user_leaf(), nullptr);
  EXPECT_NE(woken->user_leaf()->sym.find("write"), std::string::npos) << woken->user_leaf()->sym;
  EXPECT_TRUE(described_pids(data, true).count(writer));
}

}  // namespace
}  // namespace offwake
