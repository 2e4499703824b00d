// End to end, as root: one recording of wl_pipe (a child blocks in read() on a pipe that its
// parent writes to), drawn twice: by `perf offwake report --svg`, and by `go tool pprof -http`
// from `perf offwake report --pprof`, whose flame graph page headless Chromium renders. The two
// pictures must be one tree: every frame of either that is 1% of the graph or more is in the
// other, at the same path from the root (pprof's "root" above the thread's comm), with the same
// share of the graph. So the waker's stack stands on the "--" frame above the blocked stack in
// pprof's graph as it does in ours.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "flamegraph/chromium.h"
#include "flamegraph/svg_doc.h"
#include "support/go_pprof.h"
#include "support/paths.h"
#include "support/run.h"

namespace offwake::test {
namespace {

// A frame at or above this share of the graph is compared; smaller ones may be left undrawn.
constexpr double kSmallestCompared = 0.01;
// Two drawings of one frame: its share of the graph in each, within half a percent (pixels).
constexpr double kShareTolerance = 0.005;

std::string unescape(std::string s) {
  static const std::pair<const char*, const char*> entities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : entities)
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += std::string(to).size())
      s.replace(at, std::string(from).size(), to);
  return s;
}

std::string attribute(const std::string& tag, const std::string& name) {
  const std::regex re("\\s" + name + "=\"([^\"]*)\"");
  std::smatch m;
  return std::regex_search(tag, m, re) ? unescape(m[1]) : "";
}

// The frames that pprof's flame graph page drew: each <g class="frame"> at translate(x, y),
// its width and name. A frame's parent is the frame one row nearer the root whose span holds
// its left edge. Returns each frame's path from the root, joined by ";", and its share of the
// root's width.
std::map<std::string, double> pprof_frames(const std::string& dom, std::string* error) {
  struct Box {
    double x, y, width;
    std::string name, path;
  };
  std::vector<Box> boxes;
  static const std::regex tag("<g [^>]*class=\"frame\"[^>]*>");
  static const std::regex translate("translate\\(([-\\d.e]+),([-\\d.e]+)\\)");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), tag); it != std::sregex_iterator(); ++it) {
    const std::string t = it->str();
    std::smatch m;
    const std::string transform = attribute(t, "transform");
    if (!std::regex_search(transform, m, translate)) {
      *error = "a frame without translate(): " + t;
      return {};
    }
    boxes.push_back({std::stod(m[1]), std::stod(m[2]), std::stod(attribute(t, "width")), attribute(t, "name"), ""});
  }
  if (boxes.empty()) {
    *error = "no frames drawn";
    return {};
  }
  std::sort(boxes.begin(), boxes.end(), [](const Box& a, const Box& b) { return a.y < b.y; });
  // The height of a row: the smallest step between two rows' y.
  double row = 0;
  for (const Box& b : boxes)
    if (b.y > boxes[0].y && (row == 0 || b.y - boxes[0].y < row)) row = b.y - boxes[0].y;
  const double root_width = boxes[0].width;
  std::map<std::string, double> out;
  for (size_t i = 0; i < boxes.size(); ++i) {
    Box& b = boxes[i];
    if (b.y == boxes[0].y) {
      b.path = b.name;
    } else {
      for (size_t j = 0; j < i; ++j) {
        const Box& p = boxes[j];
        if (std::abs(p.y + row - b.y) < row / 2 && b.x >= p.x - 0.01 && b.x < p.x + p.width - 0.01) {
          b.path = p.path + ";" + b.name;
          break;
        }
      }
      if (b.path.empty()) {
        *error = "frame " + b.name + " has no parent";
        return {};
      }
    }
    out[b.path] += b.width / root_width;
  }
  return out;
}

// Our SVG's frames, each path from the bottom (the thread's comm) joined by ";", under "root".
std::map<std::string, double> svg_frames(const SvgDoc& doc) {
  const double width = doc.attr_number("data-graph-width");
  std::map<std::string, double> out;
  for (const SvgFrame& f : doc.frames) {
    std::string path = "root";
    for (const std::string& name : f.path) path += ";" + name;
    out[path] += f.width / width;
  }
  return out;
}

void expect_drawn_in(const std::map<std::string, double>& these, const std::map<std::string, double>& other,
                     const std::string& where) {
  size_t compared = 0;
  for (const auto& [path, share] : these) {
    if (share < kSmallestCompared || path == "root") continue;
    ++compared;
    const auto it = other.find(path);
    if (it == other.end()) {
      ADD_FAILURE() << "not in " << where << ": " << path << " (" << share << ")";
      continue;
    }
    EXPECT_NEAR(it->second, share, kShareTolerance) << path;
  }
  EXPECT_GT(compared, 20u) << "the graph's frames: the comm, both stacks, the separator";
}

TEST(PprofFlamegraphBrowser, PprofWebUiDrawsTheSameTreeAsSvg) {
  TempDir dir, profile;
  const std::string data = dir.file("perf.data"), svg = dir.file("out.svg"), pb = dir.file("out.pb.gz");
  auto rec = run(kOffwake + " record -o " + data + " -- " + kWorkloads + "wl_pipe -n 10");
  ASSERT_EQ(rec.status, 0) << rec.err;
  auto rep = run(kOffwake + " report -i " + data + " --svg " + svg + " --pprof " + pb);
  ASSERT_EQ(rep.status, 0) << rep.err;

  std::string error;
  auto doc = parse_svg(svg, &error);
  ASSERT_TRUE(doc) << error;
  const auto ours = svg_frames(*doc);

  PprofWebUi ui(pb);
  ASSERT_TRUE(ui.ok()) << ui.error();
  auto page = run_chromium(profile, "--virtual-time-budget=10000 --dump-dom '" + ui.url("flamegraph") + "'");
  ASSERT_EQ(page.status, 0) << page.err;
  const auto theirs = pprof_frames(page.out, &error);
  ASSERT_FALSE(theirs.empty()) << error << "\n" << page.out.substr(0, 2000);

  expect_drawn_in(ours, theirs, "pprof's flame graph");
  expect_drawn_in(theirs, ours, "our SVG");

  // Who woke the child, drawn where --svg draws it: its stack on "--" on the blocked stack.
  bool relay = false;
  for (const auto& [path, share] : theirs) {
    const size_t blocked = path.find(";wl_wait_for_message;"), sep = path.find(";--;"),
                 waker = path.find(";wl_send_message");
    if (blocked != std::string::npos && sep != std::string::npos && waker != std::string::npos) {
      EXPECT_LT(blocked, sep) << path;
      EXPECT_LT(sep, waker) << path;
      relay = true;
    }
  }
  EXPECT_TRUE(relay) << "no frame of wl_send_message above -- above wl_wait_for_message";
}

}  // namespace
}  // namespace offwake::test
