// scripts/bench_windows.py, the arithmetic of the benchmark's pgbench windows (TPS traced over
// untraced within one pgbench run): its Python tests (bench_windows_test.py) pass.
#include <gtest/gtest.h>

#include "support/run.h"

namespace offwake::test {
namespace {

TEST(BenchWindows, ArithmeticHolds) {
  auto r = run("python3 " OFFWAKE_SOURCE_DIR "/tests/scripts/bench_windows_test.py");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Ran 8 tests"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace offwake::test
