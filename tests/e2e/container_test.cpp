// Binaries of other mount namespaces (issue 25): a process in a container the test makes from
// Debian's tools (support/container.h: unshare, chroot), whose binary is /app/ctr_app, a path
// the host lacks, recorded by a system-wide perf offwake record. It starts once the recorder is
// attached and exits, its root file system removed, before the recording stops; after that:
//   - our report names its functions (wl_pipe's, built statically) with the blocked time and
//     the count it measured itself;
//   - Debian's perf 6.1 and perf 6.12 name them, from the build-id cache the recording filled
//     (a directory of the test's, given to perf with --buildid-dir and to us as perf hands it
//     on, in PERF_BUILDID_DIR);
//   - its samples carry the host's pids, not the container's;
//   - --no-buildid-cache leaves the cache directory empty;
//   - its blocked time is its cgroup's (a cgroup v2 directory the container runs in, named
//     as a container runtime names them), for Debian's perf report --sort cgroup and for our
//     report's --sort cgroup and pprof container label.
// A container that runs before the recording starts is described from /proc: its binary is
// read through /proc/PID/map_files, not looked up on the host. And -p of the container's process
// caches its binary too.
#include <signal.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include "support/container.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/report_table.h"
#include "support/run.h"
#include "support/side_by_side.h"
#include "support/spawned.h"
#include "support/test_cgroup.h"
#include "support/tolerances.h"
#include "support/truth.h"
#include "synth/elf_file.h"

namespace offwake::test {
namespace {

const std::string kApp = "/app/ctr_app";
const std::string kBinary = kWorkloads + "wl_pipe_static";
// Ten blocks of 20 ms, as the other end-to-end tests (see kBlockedTimeTolerance).
const std::vector<std::string> kWorkloadArgs = {"-n", "10", "-m", "20", "-r", "1"};
// A workload that runs before the recorder starts: 3 s, within which it attaches (about 1 s
// here, over 2 s beside a compiler).
const std::string kLongCount = "150";

struct ContainerRecording {
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>();
  std::string data, cache;  // the file, and the build-id cache it filled
  int status = -1;
  std::string err;
  Truth truth;  // in the container's pids
  uint32_t host_parent = 0, host_child = 0;
  // The container's cgroup, named as a container runtime names them.
  std::string container_id = container_like_id(static_cast<unsigned>(getpid()));
  std::unique_ptr<TestCgroup> cgroup = std::make_unique<TestCgroup>("docker-" + container_id + ".scope");
};

// perf offwake record -a OPTIONS, with PERF_BUILDID_DIR a fresh directory; the container runs
// once the recorder is attached (before: `before` true, the recorder starts once the workload
// is ready), and has exited, its root file system gone, when the recorder is stopped.
ContainerRecording record_container(const std::vector<std::string>& options, bool before = false) {
  ContainerRecording r;
  EXPECT_EQ(r.cgroup->error(), "");
  r.data = r.dir->file("perf.data");
  r.cache = r.dir->file("cache");
  std::filesystem::create_directory(r.cache);
  const std::string err = r.dir->file("record.err");
  std::vector<std::string> argv = {"env", "PERF_BUILDID_DIR=" + r.cache, kOffwake, "record", "-v", "-o", r.data};
  argv.insert(argv.end(), options.begin(), options.end());
  std::unique_ptr<Spawned> recorder;
  std::vector<std::string> args = kWorkloadArgs;
  if (before) args[1] = kLongCount;
  {
    std::unique_ptr<Container> c;
    auto start_container = [&] {
      c = std::make_unique<Container>(ContainerOptions{kBinary, kApp, args, r.cgroup->dir()});
      if (c->wait_for_line("ready ", 10'000).empty()) return false;
      const auto host = c->host_pids();
      r.host_parent = host.count(1) ? host.at(1) : 0;
      r.host_child = host.count(2) ? host.at(2) : 0;
      return true;
    };
    auto start_recorder = [&] {
      recorder = std::make_unique<Spawned>(argv, err);
      return wait_attached(*recorder, err);
    };
    if (before ? !start_container() || !start_recorder() : !start_recorder() || !start_container()) {
      ADD_FAILURE() << "the container or the recorder did not start";
      return r;
    }
    EXPECT_EQ(c->wait(30'000), 0) << c->out();
    r.truth = parse_truth(c->out()).empty() ? Truth{} : parse_truth(c->out()).front();
  }
  recorder->signal(SIGTERM);
  r.status = recorder->wait(60'000);
  r.err = read_file(err);
  return r;
}

// One recording for the tests that only read it.
const ContainerRecording& recorded() {
  static const ContainerRecording r = record_container({"-a"});
  return r;
}

perfdata::BuildId binary_build_id() {
  auto elf = ElfFile::open(kBinary);
  EXPECT_TRUE(elf) << elf.error().message();
  return elf ? elf->build_id() : perfdata::BuildId{};
}

std::vector<ScriptSample> script(const std::string& perf, const ContainerRecording& r) {
  auto out = run(perf + " --buildid-dir " + r.cache + " script " + kPerfScriptFields + " -i " + r.data);
  EXPECT_EQ(out.status, 0) << out.err;
  return parse_perf_script(out.out);
}

void expect_recorded(const ContainerRecording& r) {
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_GT(r.truth.count, 0u) << "no truth line";
  ASSERT_NE(r.host_child, 0u);
  ASSERT_NE(r.host_parent, 0u);
  // In the container, the workload is its pid namespace's init and the child the next.
  ASSERT_EQ(r.truth.tid, 2u);
  ASSERT_EQ(r.truth.waker_tid, 1u);
}

// The recording put the container's binary into the cache in perf's layout, read through its
// process (the host never had that path, and the root file system is gone by now).
TEST(Container, TheBinaryIsInTheBuildIdCacheInPerfsLayout) {
  const ContainerRecording& r = recorded();
  expect_recorded(r);
  const std::string hex = binary_build_id().hex();
  ASSERT_FALSE(hex.empty());
  const std::string link = r.cache + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2);
  std::error_code ec;
  EXPECT_EQ(std::filesystem::read_symlink(link, ec).string(), "../.." + kApp + "/" + hex) << link;
  EXPECT_EQ(run("cmp " + kBinary + " " + link + "/elf").status, 0);
  EXPECT_FALSE(std::filesystem::exists(kApp)) << "the host must lack " << kApp;
}

// Our report, PERF_BUILDID_DIR as perf hands it on: the child's blocks in wl_wait_for_message,
// woken by the parent in wl_send_message, the time within 5% of the workload's, the count exact.
TEST(Container, OurReportNamesItsFunctionsWithItsTime) {
  const ContainerRecording& r = recorded();
  expect_recorded(r);
  auto out = run("PERF_BUILDID_DIR=" + r.cache + " " + kOffwake + " report --stdio -i " + r.data + " --tid " +
                 std::to_string(r.host_child));
  ASSERT_EQ(out.status, 0) << out.err;
  const TableRows rows = rows_naming(out.out, r.truth.function, r.truth.waker_function, r.host_parent);
  EXPECT_NEAR(rows.ns, static_cast<double>(r.truth.blocked_ns),
              kBlockedTimeTolerance * static_cast<double>(r.truth.blocked_ns))
      << out.out;
  EXPECT_EQ(rows.count, r.truth.count) << out.out;
  EXPECT_TRUE(rows.waker_seen) << out.out;

  auto folded = run("PERF_BUILDID_DIR=" + r.cache + " " + kOffwake + " report --folded -i " + r.data);
  ASSERT_EQ(folded.status, 0) << folded.err;
  EXPECT_NE(folded.out.find("ctr_app;_start;__libc_start_main_impl;__libc_start_call_main;main;wl_wait_for_message;"),
            std::string::npos)
      << folded.out.substr(0, 4000);
}

// The tracepoint back end's stack copies (--call-graph dwarf) are unwound from the container's
// binary read through its process (/proc/PID/root), as the BPF tables are built: they were
// opened by the path, which the host lacks, and every stack ended after its first frame.
TEST(Container, StackCopiesAreUnwoundThroughItsProcess) {
  const ContainerRecording r = record_container({"-a", "--backend", "tracepoint", "--call-graph", "dwarf"});
  expect_recorded(r);
  auto folded = run("PERF_BUILDID_DIR=" + r.cache + " " + kOffwake + " report --folded --no-waker -i " + r.data +
                    " --tid " + std::to_string(r.host_child));
  ASSERT_EQ(folded.status, 0) << folded.err;
  EXPECT_NE(folded.out.find("ctr_app;_start;__libc_start_main_impl;__libc_start_call_main;main;wl_wait_for_message;"),
            std::string::npos)
      << folded.out.substr(0, 4000) << r.err;
}

// Debian's perf 6.1 and perf 6.12, the cache given with --buildid-dir: the same functions, the
// same time, and the host's pids on every sample of the container's threads.
TEST(Container, PerfNamesItsFunctionsWithHostPids) {
  const ContainerRecording& r = recorded();
  expect_recorded(r);
  for (const std::string& perf : {std::string(kDebianPerf), perf612_path()}) {
    SCOPED_TRACE(perf);
    const std::vector<ScriptSample> samples = script(perf, r);
    uint64_t blocked = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      const ScriptSample& s = samples[i];
      if (s.comm != "ctr_app") continue;
      // The host's pids: the container's (1 and 2) are the host's init and kthreadd.
      EXPECT_TRUE(s.tid == r.host_child || s.tid == r.host_parent) << s.comm << " " << s.pid << "/" << s.tid;
      EXPECT_EQ(s.pid, s.tid);
      if (s.event != "offwake-time" || s.tid != r.host_child || !s.has_frame(r.truth.function)) continue;
      ASSERT_NE(s.user_leaf(), nullptr);
      EXPECT_EQ(s.user_leaf()->sym, r.truth.function);
      EXPECT_TRUE(s.has_frame("main"));
      ASSERT_LT(i + 1, samples.size());
      EXPECT_EQ(samples[i + 1].tid, r.host_parent);
      EXPECT_TRUE(samples[i + 1].has_frame(r.truth.waker_function)) << "the waker sample of a block";
      blocked += s.period;
    }
    EXPECT_NEAR(static_cast<double>(blocked), static_cast<double>(r.truth.blocked_ns),
                kBlockedTimeTolerance * static_cast<double>(r.truth.blocked_ns));
  }
}

// --no-buildid-cache (-N, as perf record's): nothing is written to the cache directory.
TEST(Container, NoBuildIdCacheLeavesTheCacheAlone) {
  const ContainerRecording r = record_container({"-a", "--no-buildid-cache"});
  expect_recorded(r);
  EXPECT_TRUE(std::filesystem::is_empty(r.cache)) << run("find " + r.cache + " | head").out;
  EXPECT_EQ(r.err.find("build-id cache"), std::string::npos) << r.err;
  // The samples still name the container's threads by their host pids, and the mapping its
  // build id, but its functions are nowhere to be found.
  auto mmaps = run(std::string(kDebianPerf) + " script --show-mmap-events -i " + r.data + " | grep " + kApp);
  EXPECT_NE(mmaps.out.find("<" + binary_build_id().hex() + ">"), std::string::npos) << mmaps.out;
}

// A container that runs before the recording starts: its mapping is read from /proc, with the
// build id of its own file (through /proc/PID/map_files), and its binary cached, so that perf
// names its functions after it exited.
TEST(Container, AContainerAliveAtTheStartIsDescribedThroughItsProcess) {
  const ContainerRecording r = record_container({"-a"}, true);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_NE(r.host_child, 0u);
  auto mmaps = run(std::string(kDebianPerf) + " script --show-mmap-events -i " + r.data + " | grep " + kApp);
  EXPECT_NE(mmaps.out.find("<" + binary_build_id().hex() + ">"), std::string::npos) << mmaps.out;
  bool named = false;
  for (const ScriptSample& s : script(kDebianPerf, r))
    if (s.tid == r.host_child && s.event == "offwake-time" && s.user_leaf() && s.user_leaf()->sym == "wl_wait_for_message")
      named = true;
  EXPECT_TRUE(named) << r.err;
}

// -p of the container's workload (its parent, the waker): a recording about some processes
// caches their binaries too.
TEST(Container, APidRecordingCachesItsBinary) {
  TempDir dir;
  const std::string cache = dir.file("cache"), data = dir.file("perf.data"), err = dir.file("record.err");
  std::filesystem::create_directory(cache);
  std::vector<std::string> args = kWorkloadArgs;
  args[1] = kLongCount;
  Container c(ContainerOptions{kBinary, kApp, args, ""});
  ASSERT_FALSE(c.wait_for_line("ready ", 10'000).empty()) << c.out();
  const uint32_t parent = c.host_pids()[1];
  ASSERT_NE(parent, 0u);
  Spawned recorder({"env", "PERF_BUILDID_DIR=" + cache, kOffwake, "record", "-o", data, "-p", std::to_string(parent)},
                   err);
  ASSERT_TRUE(wait_attached(recorder, err));
  EXPECT_EQ(c.wait(30'000), 0);
  recorder.signal(SIGTERM);
  EXPECT_EQ(recorder.wait(60'000), 0) << read_file(err);
  const std::string hex = binary_build_id().hex();
  EXPECT_EQ(run("cmp " + kBinary + " " + cache + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + "/elf").status,
            0)
      << read_file(err);
  auto out = run(std::string(kDebianPerf) + " --buildid-dir " + cache + " script " + kPerfScriptFields + " -i " + data);
  bool main_named = false;
  for (const ScriptSample& s : parse_perf_script(out.out))
    if (s.tid == parent && s.has_frame("main")) main_named = true;
  EXPECT_TRUE(main_named) << out.out.substr(0, 3000);
}

// Its blocked time is its cgroup's: Debian's perf report --sort cgroup,pid puts the child's
// blocks under the container's cgroup, within 5% of what the child measured, and so does our
// report's --sort cgroup (with the count); --pprof labels them with the container's id.
TEST(Container, ItsBlockedTimeIsUnderItsCgroup) {
  const ContainerRecording& r = recorded();
  expect_recorded(r);
  const std::string cgroup = r.cgroup->path();
  auto report = run(std::string(kDebianPerf) + " --buildid-dir " + r.cache + " report -i " + r.data +
                    " --no-children --sort cgroup,pid --stdio -g none -n --show-total-period --percent-limit 0");
  ASSERT_EQ(report.status, 0) << report.err;
  // "   12.34%   9   181164343  /offwake-test-...scope   17409:ctr_app", per event.
  static const std::regex kEvent(R"(^# Samples: .* of event '([^']+)')");
  static const std::regex kRow(R"(^\s+[0-9.]+%\s+([0-9]+)\s+([0-9]+)\s+(\S+)\s+([0-9]+):(\S+)\s*$)");
  std::string event;
  uint64_t child_ns = 0, child_samples = 0, elsewhere_ns = 0;
  std::istringstream in(report.out);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, kEvent)) event = m[1];
    if (event != "offwake-time" || !std::regex_match(line, m, kRow) || std::stoul(m[4]) != r.host_child) continue;
    (m[3] == cgroup ? child_ns : elsewhere_ns) += std::stoull(m[2]);
    if (m[3] == cgroup) child_samples += std::stoull(m[1]);
  }
  EXPECT_GT(child_samples, 0u) << report.out;
  EXPECT_EQ(elsewhere_ns, 0u) << "the child's blocks in another cgroup\n" << report.out;
  // The child's blocks besides those it timed (its start, its exit) are a few microseconds.
  EXPECT_NEAR(static_cast<double>(child_ns), static_cast<double>(r.truth.blocked_ns),
              kBlockedTimeTolerance * static_cast<double>(r.truth.blocked_ns))
      << report.out;

  // Ours: the child's blocks in the cgroup's group ("# cgroup PATH: 181.16 ms, 0.35%, 10 blocks").
  auto ours = run("PERF_BUILDID_DIR=" + r.cache + " " + kOffwake + " report -i " + r.data +
                  " --stdio --sort cgroup --cgroup " + cgroup + " --tid " + std::to_string(r.host_child));
  ASSERT_EQ(ours.status, 0) << ours.err;
  static const std::regex kGroup(R"(# cgroup (\S+): ([0-9.]+) (ns|us|ms|s), [0-9.]+%, ([0-9]+) blocks)");
  ASSERT_TRUE(std::regex_search(ours.out, m, kGroup)) << ours.out;
  EXPECT_EQ(m[1], cgroup);
  EXPECT_EQ(std::stoull(m[4]), r.truth.count) << ours.out;
  EXPECT_NEAR(parse_human_ns(m[2], m[3]), static_cast<double>(r.truth.blocked_ns),
              kBlockedTimeTolerance * static_cast<double>(r.truth.blocked_ns))
      << ours.out;
}

}  // namespace
}  // namespace offwake::test
