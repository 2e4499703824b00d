// Golden files: the writer's output for fixed inputs, byte for byte. A change in the format
// shows up here as a diff to review; regenerate with OFFWAKE_REGENERATE_GOLDEN=1 (never by hand).
// The same switch writes the seed inputs of the reader's fuzz corpus.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <variant>

#include "fixtures.h"
#include "perfdata/reader.h"
#include "support/golden_file.h"
#include "support/run.h"

namespace offwake::perfdata {
namespace {

const std::string kPerfdataDir = OFFWAKE_SOURCE_DIR "/tests/perfdata";

using offwake::test::check_golden;

TEST(Golden, PipeModeStream) {
  Bytes produced = test::write_to_memory(Mode::kPipe, test::two_events(), test::every_record());
  check_golden(kPerfdataDir + "/golden/pipe_two_events.data", produced);

  // The golden itself reads back as its inputs.
  auto back = test::read_all(produced);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->records, test::every_record());
  EXPECT_EQ(back->info.host, test::fixed_host());
}

// perf reads the golden: Debian's perf script shows each of its samples (the LOST records in
// it make perf warn, as they should).
TEST(Golden, PerfReadsTheGolden) {
  auto r = offwake::test::run("perf script -F comm,tid,period,event -i " + kPerfdataDir + "/golden/pipe_two_events.data");
  ASSERT_EQ(r.status, 0) << r.err;
  size_t samples = 0;
  for (const Record& rec : test::every_record()) samples += std::holds_alternative<SampleRecord>(rec);
  ASSERT_GT(samples, 0u);
  size_t shown = 0;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) shown += line.find(" offwake:") != std::string::npos;
  EXPECT_EQ(shown, samples) << r.out;
}

TEST(Golden, WriterOutputIsDeterministic) {
  // Nothing from the clock, the pid or uninitialised memory may leak into the output.
  for (Mode mode : {Mode::kFile, Mode::kPipe}) {
    EXPECT_EQ(test::write_to_memory(mode, test::two_events(), test::every_record()),
              test::write_to_memory(mode, test::two_events(), test::every_record()));
  }
}

TEST(FuzzSeeds, AreTheWritersOutput) {
  const std::string dir = kPerfdataDir + "/fuzz-corpus/";
  check_golden(dir + "file_two_events.data",
               test::write_to_memory(Mode::kFile, test::two_events(), test::every_record()));
  check_golden(dir + "file_one_event.data",
               test::write_to_memory(Mode::kFile, test::one_event(), test::few_records()));
  check_golden(dir + "pipe_one_event.data",
               test::write_to_memory(Mode::kPipe, test::one_event(), test::few_records()));
}

}  // namespace
}  // namespace offwake::perfdata
