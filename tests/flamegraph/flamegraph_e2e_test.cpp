// End to end, as root: `perf offwake record` on wl_pipe (a child blocks in read() on a pipe
// that its parent writes to), then `perf offwake report --svg`. The graph must hold the
// workload's functions where the off-wake layout puts them, and the blocked function's width
// must be its share of the graph as the workload measured it (within 5%).
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "flamegraph/svg_doc.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "support/tolerances.h"
#include "support/truth.h"

namespace offwake::test {
namespace {

bool has(const std::vector<std::string>& path, const std::string& name) {
  return std::find(path.begin(), path.end(), name) != path.end();
}

// Within 5% (kBlockedTimeTolerance, support/tolerances.h). A width is a share of the graph:
// the time's error, plus pixel rounding far below 1%.
void expect_within_5_percent(double measured, double truth, const std::string& what) {
  ASSERT_GT(truth, 0) << what;
  EXPECT_LT(std::abs(measured - truth) / truth, kBlockedTimeTolerance)
      << what << ": " << measured << " against " << truth;
}

TEST(FlamegraphE2e, PipeWorkloadWidthsFollowTheMeasuredBlockedTime) {
  TempDir dir;
  const std::string data = dir.file("perf.data"), svg = dir.file("out.svg");
  auto rec = run(kOffwake + " record -o " + data + " -- " + kWorkloads + "wl_pipe -n 10");
  ASSERT_EQ(rec.status, 0) << rec.err;
  auto truths = parse_truth(rec.out);
  ASSERT_EQ(truths.size(), 1u) << rec.out;
  const Truth& t = truths[0];

  auto rep = run(kOffwake + " report -i " + data + " --svg " + svg);
  ASSERT_EQ(rep.status, 0) << rep.err;
  EXPECT_EQ(rep.out, "") << "--svg alone prints no table";
  EXPECT_NE(rep.err.find("perf offwake report: wrote " + svg + " ("), std::string::npos) << rep.err;
  struct stat st{};
  ASSERT_EQ(stat(svg.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  std::string error;
  auto doc = parse_svg(svg, &error);
  ASSERT_TRUE(doc) << error;
  const double total = doc->attr_number("data-total"), width = doc->attr_number("data-graph-width");
  ASSERT_GT(total, 0);

  // The blocked function: above the thread frame and its callers, below the separator.
  double blocked_ns = 0, blocked_px = 0, woken_by_sender_ns = 0;
  for (const SvgFrame& f : doc->frames) {
    if (f.name() == t.function) {
      EXPECT_EQ(f.kind, "user");
      EXPECT_EQ(f.path.front(), "wl_pipe");
      EXPECT_EQ(doc->find({f.path.front()})->kind, "thread");
      EXPECT_FALSE(has(f.path, "--")) << "the blocked stack is below the separator";
      blocked_ns += static_cast<double>(f.value);
      blocked_px += f.width;
    }
    if (f.name() == t.waker_function && has(f.path, t.function)) {
      EXPECT_EQ(f.kind, "waker-user");
      EXPECT_TRUE(has(f.path, "--"));
      woken_by_sender_ns += static_cast<double>(f.value);
    }
  }
  expect_within_5_percent(blocked_ns, static_cast<double>(t.blocked_ns), "blocked ns in the graph");
  expect_within_5_percent(blocked_px / width, static_cast<double>(t.blocked_ns) / total, "share of the width");
  // Blocks whose wakeup the kernel never traced have no waker stack: as rarely as the truth
  // allows (max_missed_ns, support/tolerances.h), each counted by the summary.
  EXPECT_GT(woken_by_sender_ns, 0) << "no " << t.waker_function << " above " << t.function;
  if (blocks_without_waker(rec.err) == 0)
    expect_within_5_percent(woken_by_sender_ns, static_cast<double>(t.blocked_ns), "woken by the sender");
  EXPECT_LE(blocked_ns - woken_by_sender_ns, static_cast<double>(max_missed_ns(t.blocked_ns, t.count)))
      << "time in " << t.function << " without " << t.waker_function << " above it";

  // Between the blocked function and the separator: the kernel's side of read().
  bool kernel_below_separator = false;
  for (const SvgFrame& f : doc->frames)
    if (f.kind == "kernel" && has(f.path, t.function) && !has(f.path, "--")) kernel_below_separator = true;
  EXPECT_TRUE(kernel_below_separator);

  // The subtitle names the input and the totals.
  bool named_input = false, totals = false;
  for (const auto& [cls, text] : doc->texts) {
    named_input |= cls == "sub" && text.find(data) != std::string::npos;
    totals |= cls == "sub" && text.rfind("off-CPU ", 0) == 0;
  }
  EXPECT_TRUE(named_input && totals);
}

TEST(FlamegraphE2e, UnwritableOutputIsAnErrorAndTableStaysAvailable) {
  TempDir dir;
  const std::string data = dir.file("perf.data");
  auto rec = run(kOffwake + " record -q -o " + data + " -- " + kWorkloads + "wl_pipe -n 3");
  ASSERT_EQ(rec.status, 0) << rec.err;
  auto bad = run(kOffwake + " report -i " + data + " --svg " + dir.file("no/such/dir/out.svg"));
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err, "perf offwake report: cannot create " + dir.file("no/such/dir/out.svg") +
                        ": No such file or directory\n");
  // With --stdio as well, the table comes first and the graph is written too.
  auto both = run(kOffwake + " report -i " + data + " --stdio --svg " + dir.file("both.svg"));
  EXPECT_EQ(both.status, 0) << both.err;
  EXPECT_NE(both.out.find("wl_pipe"), std::string::npos);
  std::string error;
  EXPECT_TRUE(parse_svg(dir.file("both.svg"), &error)) << error;
}

}  // namespace
}  // namespace offwake::test
