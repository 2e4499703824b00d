// --time's forms (report/sample_filter.h: parse_time_range, percent_times), perf 6.1's: what
// each selects and which are usage errors. The e2e tests (sample_filters_test) check the
// selections against perf script and perf report on a recording. Unit, no privileges.
#include <gtest/gtest.h>

#include "report/sample_filter.h"

namespace offwake::report {
namespace {

// What `text` parses to; a failure is the test's.
TimeSelection parsed(const std::string& text) {
  auto t = parse_time_range(text);
  EXPECT_TRUE(static_cast<bool>(t)) << text << ": " << (t ? "" : t.error().message());
  return t ? *t : TimeSelection{};
}

std::vector<TimeRange> absolute(const std::string& text) {
  const TimeSelection t = parsed(text);
  EXPECT_TRUE(t.percents.empty()) << text;
  return t.ranges;
}

std::vector<PercentRange> percents(const std::string& text) {
  const TimeSelection t = parsed(text);
  EXPECT_TRUE(t.ranges.empty()) << text;
  return t.percents;
}

TEST(TimeSelection, AbsoluteRangesOneOrSeveralSeparatedBySpaces) {
  EXPECT_EQ(absolute("1.5,2"), (std::vector<TimeRange>{{1500000000, 2000000000}}));
  EXPECT_EQ(absolute("1.000000001,"), (std::vector<TimeRange>{{1000000001, 0}}));
  EXPECT_EQ(absolute(",3"), (std::vector<TimeRange>{{0, 3000000000}}));
  EXPECT_EQ(absolute(","), (std::vector<TimeRange>{{0, 0}}));
  EXPECT_EQ(absolute("1,2 3,4"), (std::vector<TimeRange>{{1000000000, 2000000000}, {3000000000, 4000000000}}));
  // Spaces after a comma are the range's; the last range may be open.
  EXPECT_EQ(absolute("1, 2  3,"), (std::vector<TimeRange>{{1000000000, 2000000000}, {3000000000, 0}}));
}

TEST(TimeSelection, PercentForms) {
  EXPECT_EQ(percents("10%/2"), (std::vector<PercentRange>{{0.1, 0.2}}));
  EXPECT_EQ(percents("10%/1,10%/3"), (std::vector<PercentRange>{{0.0, 0.1}, {0.2, 0.1 * 3}}));
  EXPECT_EQ(percents("0%-10%"), (std::vector<PercentRange>{{0.0, 0.1}}));
  EXPECT_EQ(percents("0%-10%,30%-40%"), (std::vector<PercentRange>{{0.0, 0.1}, {0.3, 0.4}}));
  EXPECT_EQ(percents("0%-10%,"), (std::vector<PercentRange>{{0.0, 0.1}}));  // as perf lets it be
  EXPECT_EQ(percents("50%"), (std::vector<PercentRange>{{0.0, 0.5}}));
  EXPECT_EQ(percents("12.5%/8"), (std::vector<PercentRange>{{0.125 * 7, 1.0}}));
  EXPECT_EQ(percents("20%-10%"), (std::vector<PercentRange>{{0.2, 0.1}}));  // nothing, as in perf
}

// perf's rounding: ends rounded to the ns, a slice that ends before the last sample 1 ns
// short, so that 10%/1 and 10%/2 share no sample.
TEST(TimeSelection, PercentsAreOfTheFirstToTheLastSample) {
  const uint64_t first = 1000, last = 2001;  // a span of 1001 ns
  EXPECT_EQ(percent_times({{0.0, 0.1}, {0.1, 0.2}}, first, last),
            (std::vector<TimeRange>{{1000, 1099}, {1100, 1199}}));
  EXPECT_EQ(percent_times({{0.9, 1.0}}, first, last), (std::vector<TimeRange>{{1901, 2001}}));
  EXPECT_EQ(percent_times({{0.5, 0.5}}, first, last), (std::vector<TimeRange>{{1501, 1501}}));
  TimeSelection t{"", percent_times({{0.0, 0.1}, {0.3, 0.4}}, first, last), {}};
  EXPECT_FALSE(t.skips(1000));
  EXPECT_FALSE(t.skips(1099));
  EXPECT_TRUE(t.skips(1100));
  EXPECT_FALSE(t.skips(1300));
  EXPECT_TRUE(t.skips(1400));
  EXPECT_FALSE(t.skips(0));  // a sample without a time is kept
}

TEST(TimeSelection, BadFormsAreUsageErrorsNamingTheOption) {
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"", "expected start,stop"},
           {"abc", "expected start,stop"},
           {"1,2,3", "expected start,stop"},
           {"2,1", "'2,1' stops before it starts"},
           {"1,3 2,4", "'2,4' does not start after the range before it ends"},
           {"1,2 2,3", "'2,3' does not start after"},
           {"1, 2,3", "expected start,stop"},
           {"1.1234567890,", "'1.1234567890' is not a time in seconds"},
           {"-1,", "'-1' is not a time in seconds"},
           {"10%/0", "'10%/0' is not one of perf's percent forms"},
           {"10%/11", "'10%/11' is not one of perf's percent forms"},
           {"0%/2", "'0%/2' is not one of perf's percent forms"},
           {"10%/x", "'10%/x' is not one of perf's percent forms"},
           {"0%-110%", "'0%-110%' is not one of perf's percent forms"},
           {"0%-10%,20%", "'20%' is not one of perf's percent forms"},
           {"0%-10%,,20%-30%", "'' is not one of perf's percent forms"},
           {"10%/1,0%-10%", "'0%-10%' is not one of perf's percent forms"},
           {"x%", "'x%' is not one of perf's percent forms"},
           {"10%x", "'10%x' is not one of perf's percent forms"},
           {"1,10%", "'1,10%' is not one of perf's percent forms"},
       }) {
    auto t = parse_time_range(text);
    ASSERT_FALSE(static_cast<bool>(t)) << text;
    EXPECT_EQ(t.error().kind(), ErrorKind::kUsage) << text;
    EXPECT_EQ(t.error().message().rfind("--time '" + text + "': ", 0), 0u) << t.error().message();
    EXPECT_NE(t.error().message().find(says), std::string::npos) << t.error().message();
  }
}

}  // namespace
}  // namespace offwake::report
