// scripts/check-skips.sh, which make test and .ci/run apply to ctest's output: a skipped test
// fails the run unless tests/allowed-skips.txt lists it.
#include <gtest/gtest.h>

#include <fstream>

#include "support/run.h"

namespace offwake::test {
namespace {

const std::string kCheck = "bash " OFFWAKE_SOURCE_DIR "/scripts/check-skips.sh ";

// Lines as ctest 3.25 prints them.
const char* kPassed = "    Start 12: Suite.Passes\n12/14 Test #12: Suite.Passes ...................   Passed    0.01 sec\n";
const char* kSkipped =
    "    Start 13: ScriptHost.OffwakeKeysNameTheWaker\n"
    "13/14 Test #13: ScriptHost.OffwakeKeysNameTheWaker .....***Skipped   0.02 sec\n";

TEST(CheckSkips, FailsOnASkippedTestThatIsNotAllowed) {
  TempDir dir;
  const std::string log = dir.file("ctest.log");
  std::ofstream(log) << kPassed << kSkipped << "100% tests passed, 0 tests failed out of 14\n";
  auto r = run(kCheck + log);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "check-skips: ScriptHost.OffwakeKeysNameTheWaker was skipped, and is not on tests/allowed-skips.txt\n");
}

TEST(CheckSkips, PassesWithoutSkips) {
  TempDir dir;
  const std::string log = dir.file("ctest.log");
  std::ofstream(log) << kPassed << "100% tests passed, 0 tests failed out of 1\n";
  auto r = run(kCheck + log);
  EXPECT_EQ(r.status, 0) << r.err;
}

// What a set-up failure looks like to ctest: GoogleTest reports the suite's tests as skipped.
TEST(CheckSkips, ASetUpFailureIsCaught) {
  TempDir dir;
  const std::string src = dir.file("setup_fails.cpp"), bin = dir.file("setup_fails");
  std::ofstream(src) << R"(#include <gtest/gtest.h>
struct S : ::testing::Test { static void SetUpTestSuite() { ASSERT_EQ(1, 2); } };
TEST_F(S, One) {}
)";
  auto build = run("g++ -std=c++20 -o " + bin + " " + src + " -lgtest -lgtest_main -pthread");
  ASSERT_EQ(build.status, 0) << build.err;
  std::ofstream(dir.file("CTestTestfile.cmake"))
      << "add_test(S.One \"" << bin << "\" --gtest_filter=S.One)\n"
      << "set_tests_properties(S.One PROPERTIES SKIP_REGULAR_EXPRESSION \"\\\\[  SKIPPED \\\\]\")\n";
  auto ctest = run("cd " + dir.path() + " && ctest 2>&1 > ctest.log; cat ctest.log");
  auto r = run(kCheck + dir.file("ctest.log"));
  EXPECT_EQ(r.status, 1) << ctest.out;
  EXPECT_NE(r.err.find("S.One was skipped"), std::string::npos) << ctest.out;
}

}  // namespace
}  // namespace offwake::test
