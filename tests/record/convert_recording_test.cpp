// convert_recording()'s refusals carry a kind the caller can branch on: what the input file
// lacks is bad input, a file that cannot be opened is I/O.
#include <gtest/gtest.h>

#include <fstream>

#include "perfdata/writer.h"
#include "record/convert_recording.h"
#include "support/run.h"
#include "support/test_events.h"
#include "synth/host_info.h"

namespace offwake {
namespace {

ConvertOptions options(const test::TempDir& dir, const std::string& input) {
  ConvertOptions o;
  o.input = input;
  o.output = dir.file("out.data");
  o.quiet = true;
  return o;
}

TEST(ConvertRecordingKinds, AFileWithoutTracepointsIsBadInput) {
  test::TempDir dir;
  const std::string input = dir.file("probe.data");
  auto w = perfdata::PerfDataWriter::create_file(input, {test::callchain_event("probe")}, collect_host_info({"probe"}));
  ASSERT_TRUE(w.ok()) << w.error().message();
  ASSERT_TRUE(w->close().ok());
  auto r = convert_recording(options(dir, input), {"convert"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().is(ErrorKind::kBadInput)) << r.error().message();
  EXPECT_NE(r.error().message().find("has no tracing data"), std::string::npos) << r.error().message();
}

TEST(ConvertRecordingKinds, TextIsBadInputAndAMissingFileIsIo) {
  test::TempDir dir;
  const std::string text = dir.file("text");
  std::ofstream(text) << "not a perf.data file, but long enough to hold a header's magic\n";
  auto bad = convert_recording(options(dir, text), {"convert"});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.error().is(ErrorKind::kBadInput)) << bad.error().message();
  auto missing = convert_recording(options(dir, dir.file("nothing.data")), {"convert"});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.error().is(ErrorKind::kIo)) << missing.error().message();
}

}  // namespace
}  // namespace offwake
