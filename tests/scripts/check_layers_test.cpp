// scripts/check-layers.py: the folders of perf-plugin/ include only what the data flow lets
// them (the readers and the tracepoint pairer neither bpf/ nor tracking/ nor record/).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/run.h"

namespace offwake::test {
namespace {

const std::string kCheck = "python3 " OFFWAKE_SOURCE_DIR "/scripts/check-layers.py ";

TEST(CheckLayers, TheTreeFollowsTheDataFlow) {
  auto r = run(kCheck + OFFWAKE_SOURCE_DIR);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// A copy of the tree in which the report includes the BPF loader: named, and the check fails.
TEST(CheckLayers, AReaderThatIncludesTheBpfLoaderIsNamed) {
  TempDir dir;
  namespace fs = std::filesystem;
  fs::copy(OFFWAKE_SOURCE_DIR "/perf-plugin", dir.file("perf-plugin"), fs::copy_options::recursive);
  {
    std::ofstream f(dir.file("perf-plugin/report/profile.cpp"), std::ios::app);
    f << "#include \"bpf/offwake_loader.h\"\n";
  }
  auto r = run(kCheck + dir.path());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "check-layers: report/profile.cpp includes bpf/, which report/ may not\n");
}

}  // namespace
}  // namespace offwake::test
