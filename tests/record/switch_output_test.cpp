// --switch-output's values and file names, without a recording.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "record/switch_output.h"

namespace offwake {
namespace {

TEST(SwitchOutputSpec, SignalTimesAndSizesAsPerf) {
  auto signal = parse_switch_output("signal");
  ASSERT_TRUE(signal.ok());
  EXPECT_EQ(signal->mode, SwitchOutputSpec::Mode::kSignal);
  const std::pair<const char*, uint64_t> times[] = {
      {"10s", 10'000'000'000ull}, {"5m", 300'000'000'000ull}, {"1h", 3'600'000'000'000ull}, {"2d", 172'800'000'000'000ull}};
  for (const auto& [text, ns] : times) {
    auto t = parse_switch_output(text);
    ASSERT_TRUE(t.ok()) << text;
    EXPECT_EQ(t->mode, SwitchOutputSpec::Mode::kTime) << text;
    EXPECT_EQ(t->interval_ns, ns) << text;
  }
  const std::pair<const char*, uint64_t> sizes[] = {{"512B", 512}, {"4K", 4096}, {"100M", 100ull << 20}, {"2G", 2ull << 30}};
  for (const auto& [text, bytes] : sizes) {
    auto s = parse_switch_output(text);
    ASSERT_TRUE(s.ok()) << text;
    EXPECT_EQ(s->mode, SwitchOutputSpec::Mode::kSize) << text;
    EXPECT_EQ(s->bytes, bytes) << text;
  }
  for (const char* bad : {"", "s", "10", "10x", "0s", "-1s", "1.5s", "10 s", "400d", "2000G", "signals"}) {
    auto b = parse_switch_output(bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_TRUE(b.error().is(ErrorKind::kUsage)) << bad;
  }
  EXPECT_EQ(parse_switch_max_files("5").value(), 5u);
  for (const char* bad : {"", "0", "-1", "five", "1000001"}) EXPECT_FALSE(parse_switch_max_files(bad).ok()) << bad;
}

TEST(SwitchOutputSpec, TimestampIsPerfs) {
  EXPECT_TRUE(std::regex_match(switch_output_timestamp(), std::regex("20[0-9]{14}")));
}

TEST(SwitchedFiles, KeepsTheNewestAndRemovesTheRest) {
  const std::string dir = "/tmp/offwake-switched-files." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  SwitchedFiles files(2);
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) {
    const std::string name = files.next_name(dir + "/perf.data");
    std::ofstream(name) << i;
    ASSERT_TRUE(files.written(name).ok());
    names.push_back(name);
  }
  EXPECT_EQ(files.count(), 4u);
  EXPECT_EQ(files.removed(), 2u);
  EXPECT_FALSE(std::filesystem::exists(names[0]));
  EXPECT_FALSE(std::filesystem::exists(names[1]));
  EXPECT_TRUE(std::filesystem::exists(names[2]));
  EXPECT_TRUE(std::filesystem::exists(names[3]));
  std::set<std::string> distinct(names.begin(), names.end());
  EXPECT_EQ(distinct.size(), 4u) << "names within a hundredth of a second wait for their own";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace offwake
