// make -f Makefile.perf demo: what a newcomer runs first. It builds and installs the tool alone
// (no test programs, none of the tests' readers: perf 6.12, Go, Chromium), records the bundled
// workload, and shows it with our report, perf report and perf script, and as a flame graph.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <regex>
#include <string>

#include "support/paths.h"
#include "support/run.h"

namespace offwake::test {
namespace {

// `make -n TARGET` with a build and deps folder of the test's own: the commands make would run.
std::string dry_run(const TempDir& dir, const std::string& target) {
  auto r = run("make -n -f " OFFWAKE_SOURCE_DIR "/Makefile.perf " + target + " BUILD=" + dir.file("build") +
               " DEPS=" + dir.file("deps") + " DESTDIR=" + dir.file("root"));
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

TEST(Demo, BuildsTheToolAloneWithoutTheTestsReaders) {
  TempDir dir;
  const std::string demo = dry_run(dir, "demo");
  EXPECT_NE(demo.find("scripts/install-deps.sh " + dir.file("deps")), std::string::npos) << demo;
  EXPECT_EQ(demo.find("--tests"), std::string::npos) << "the demo installs the tests' readers:\n" << demo;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(demo, m, std::regex("cmake --build [^\n]*"))) << demo;
  EXPECT_NE(m.str().find("--target perf-offwake man wl_pipe"), std::string::npos) << m.str();
  EXPECT_NE(demo.find("scripts/demo.sh"), std::string::npos) << demo;
}

TEST(Demo, TestInstallsTheTestsReaders) {
  TempDir dir;
  const std::string test = dry_run(dir, "test");
  EXPECT_NE(test.find("scripts/install-deps.sh --tests " + dir.file("deps")), std::string::npos) << test;
}

// The demo script itself, with this build's perf-offwake found by Debian's perf on PATH.
TEST(Demo, ShowsOurReportPerfsReportAndScriptAndWritesAFlameGraph) {
  auto r = run(kPerfFindsUs + "bash " OFFWAKE_SOURCE_DIR "/scripts/demo.sh " OFFWAKE_BINARY_DIR);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::smatch dir;
  ASSERT_TRUE(std::regex_search(r.out, dir, std::regex("The recording stays in (/tmp/perf-offwake-demo\\.[A-Za-z0-9]+)/perf\\.data")))
      << r.out;
  const std::string out = dir[1];
  // Our table: the blocked stack by time, its waker under it.
  EXPECT_NE(r.out.find("== perf offwake report"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("wl_wait_for_message[^\n]*\n(.*\n)*?.*wl_send_message"))) << r.out;
  // perf report's and perf script's views of the same file.
  EXPECT_NE(r.out.find("offwake-time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("offwake-waker:"), std::string::npos) << r.out;
  // The flame graph is where the demo says, an SVG that names the workload's functions.
  std::smatch svg;
  ASSERT_TRUE(std::regex_search(r.out, svg, std::regex("Its off-wake flame graph is (\\S+\\.svg)"))) << r.out;
  EXPECT_EQ(svg[1].str(), out + "/offwake.svg");
  const std::string graph = read_file(svg[1]);
  EXPECT_NE(graph.find("<svg"), std::string::npos);
  EXPECT_NE(graph.find("wl_wait_for_message"), std::string::npos);
  EXPECT_NE(graph.find("wl_send_message"), std::string::npos);
  struct stat st{};
  ASSERT_EQ(stat(svg[1].str().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  run("rm -rf '" + out + "'");
}

}  // namespace
}  // namespace offwake::test
