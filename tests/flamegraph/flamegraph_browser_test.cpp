// The flame graph in a real browser (Debian's chromium, headless): a screenshot shows the
// frames where the SVG puts them, in their colours; and a page that embeds the graph drives it
// with real DOM events (hover, click to zoom, the Reset zoom, Search and Clear search controls,
// Ctrl-F, Escape) and the window.offwake* entry points, then writes what it saw into its own
// DOM, which Chromium dumps. The expectations come from the synthetic stacks, not from the
// script.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "flamegraph/chromium.h"
#include "flamegraph/flame_test_stacks.h"
#include "flamegraph/png.h"
#include "flamegraph/svg_doc.h"
#include "report/flame_tree.h"
#include "report/flamegraph.h"
#include "report/xml_text.h"
#include "support/run.h"

namespace offwake::test {
namespace {

constexpr double kX0 = 10, kWidth = 1180, kCharWidth = 6.7;

std::string write_graph(const TempDir& dir, const std::vector<FlameStack>& stacks) {
  const std::string file = dir.file("graph.svg");
  std::ofstream(file, std::ios::binary) << report::render_flamegraph_svg(stacks, {});
  return file;
}

TEST(FlamegraphBrowser, ScreenshotShowsTheFramesInTheirColours) {
  TempDir dir, profile;
  const auto stacks = offwake_example();
  const std::string svg = write_graph(dir, stacks), png = dir.file("shot.png");
  auto r = chromium_screenshot(profile, svg, png, 1200, 800);
  ASSERT_EQ(r.status, 0) << r.err;
  auto image = decode_png(read_file(png));
  ASSERT_TRUE(image) << image.error().message();
  ASSERT_EQ(image->width, 1200u);
  ASSERT_EQ(image->height, 800u);

  size_t non_white = 0;
  std::set<uint32_t> colours;
  for (uint32_t px : image->rgb) {
    colours.insert(px);
    non_white += px != 0xffffff;
  }
  EXPECT_GT(non_white, image->rgb.size() / 8) << "mostly blank";
  EXPECT_GT(colours.size(), 40u);

  // Each frame's fill, just inside the top of its rectangle (above the label's glyphs).
  std::string error;
  auto doc = parse_svg(svg, &error);
  ASSERT_TRUE(doc) << error;
  ASSERT_FALSE(doc->frames.empty());
  size_t seen = 0;
  for (const SvgFrame& f : doc->frames) {
    const auto x = static_cast<uint32_t>(f.x + f.width / 2), y = static_cast<uint32_t>(f.y + 1);
    ASSERT_LT(x, image->width);
    ASSERT_LT(y, image->height);
    const uint32_t want = static_cast<uint32_t>(std::stoul(f.fill.substr(1), nullptr, 16));
    if (image->rgb[y * image->width + x] == want) ++seen;
    else ADD_FAILURE() << f.name() << ": " << std::hex << image->rgb[y * image->width + x] << " for " << f.fill;
  }
  EXPECT_EQ(seen, doc->frames.size());
}

// The scenario, run by the page on the graph's document. `graph()` gives {doc, win, svg}
// (see the two pages below); each step writes lines "STEP KEY VALUE" (tab-separated), and
// "STEP frame PATH X WIDTH VISIBLE LABEL" for every frame.
constexpr const char* kScenario = R"JS(
function scenario(graph) {
  const {doc, win, svg} = graph;
  const out = [];
  const put = (step, key, value) => out.push([step, key, String(value)].join('\t'));
  const rectOf = (g) => Array.from(g.children).find((c) => c.localName === 'rect');
  const textOf = (g) => Array.from(g.children).find((c) => c.localName === 'text');
  const pathOf = (g) => {
    const names = [];
    for (let e = g; e && e.classList && e.classList.contains('f'); e = e.parentNode) names.unshift(e.getAttribute('data-name'));
    return names.join(';');
  };
  const frame = (path) => Array.from(svg.querySelectorAll('g.f')).find((g) => pathOf(g) === path);
  const click = (el) => el.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: win}));
  const dump = (step) => {
    for (const g of svg.querySelectorAll('g.f')) {
      const r = rectOf(g), t = textOf(g);
      put(step, 'frame', [pathOf(g), r.getAttribute('x'), r.getAttribute('width'),
                          r.getBoundingClientRect().width > 0 ? 1 : 0, t ? t.textContent : ''].join('\t'));
    }
    for (const a of ['data-zoomed-name', 'data-search-term', 'data-search-share', 'data-search-value'])
      put(step, a, svg.hasAttribute(a) ? svg.getAttribute(a) : '(none)');
    put(step, 'matched', svg.querySelectorAll('g.f.m').length);
    put(step, 'matched-text', svg.querySelector('#matched').textContent);
  };
  const details = () => svg.querySelector('#details').textContent;

  put('load', 'api', [typeof win.offwakeZoom, typeof win.offwakeReset, typeof win.offwakeSearch].join(','));
  dump('load');

  const reply = rectOf(frame('app;main;wait_reply'));
  reply.dispatchEvent(new MouseEvent('mouseover', {bubbles: true, view: win}));
  put('hover', 'details', details());
  reply.dispatchEvent(new MouseEvent('mouseout', {bubbles: true, view: win}));
  put('unhover', 'details', details());

  click(rectOf(frame('app;main')));
  dump('zoom-main');
  click(textOf(frame('app;main;wait_lock')) || rectOf(frame('app;main;wait_lock')));
  dump('zoom-lock');
  click(rectOf(svg.querySelector('#reset-zoom')));
  dump('reset');
  put('api-zoom', 'result', win.offwakeZoom(frame('logger;main;write_log')));
  dump('api-zoom');
  win.offwakeReset();
  dump('api-reset');

  put('search-waker', 'share', win.offwakeSearch('try_to_wake_up'));
  dump('search-waker');
  put('search-nested', 'share', win.offwakeSearch('^(main|wait_reply)$'));
  dump('search-nested');
  put('search-text', 'share', win.offwakeSearch('[hardirq'));
  dump('search-text');

  win.prompt = () => 'futex';
  const key = new KeyboardEvent('keydown', {key: 'f', ctrlKey: true, bubbles: true, cancelable: true});
  svg.dispatchEvent(key);
  put('ctrl-f', 'prevented', key.defaultPrevented);
  dump('ctrl-f');
  click(rectOf(svg.querySelector('#clear-search')));
  dump('clear');
  win.prompt = () => 'blk_';
  click(svg.querySelector('#search text'));
  dump('search-control');
  svg.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', bubbles: true}));
  dump('escape');
  return out.join('\n');
}
function finish(text) {
  document.getElementById('result').textContent = text;
}
function run(graph) {
  try { finish(scenario(graph)); } catch (e) { finish('error\t' + e + '\t' + e.stack); }
}
)JS";

// The graph as its own document in an <object>, as when the .svg file is opened.
std::string object_page() {
  return std::string("<!DOCTYPE html>\n<html><body>\n"
                     "<object id=\"graph\" type=\"image/svg+xml\" data=\"graph.svg\" width=\"1200\" height=\"800\">"
                     "</object>\n<pre id=\"result\">not run</pre>\n<script>\n") +
         kScenario +
         "const obj = document.getElementById('graph');\n"
         "obj.addEventListener('load', () => run({doc: obj.contentDocument, win: obj.contentWindow,\n"
         "                                        svg: obj.contentDocument.documentElement}));\n"
         "</script>\n</body></html>\n";
}

// The graph inlined into an HTML page, as a report page might include it.
std::string inline_page(const std::string& svg_text) {
  std::string svg = svg_text.substr(svg_text.find("<svg"));  // HTML has no XML declaration
  return std::string("<!DOCTYPE html>\n<html><body>\n") + svg + "<pre id=\"result\">not run</pre>\n<script>\n" +
         kScenario +
         "window.addEventListener('load', () => run({doc: document, win: window,\n"
         "                                          svg: document.querySelector('svg')}));\n"
         "</script>\n</body></html>\n";
}

std::string html_unescape(const std::string& s) {
  std::string out;
  static const std::pair<const char*, char> kEntities[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'},
                                                           {"&quot;", '"'}, {"&#39;", '\''}, {"&nbsp;", ' '}};
  for (size_t i = 0; i < s.size();) {
    bool replaced = false;
    for (const auto& [entity, c] : kEntities) {
      if (s.compare(i, strlen(entity), entity) == 0) {
        out += c;
        i += strlen(entity);
        replaced = true;
        break;
      }
    }
    if (!replaced) out += s[i++];
  }
  return out;
}

struct FrameState {
  double x = 0, width = 0;
  bool visible = false;
  std::string label;
};

// What the page wrote, by step.
struct Observed {
  std::map<std::string, std::map<std::string, std::string>> values;  // step -> key -> value
  std::map<std::string, std::map<std::string, FrameState>> frames;   // step -> path -> state
};

Observed parse_result(const std::string& dom, std::string* error) {
  Observed o;
  const std::string open = "<pre id=\"result\">";
  const size_t from = dom.find(open), to = dom.find("</pre>", from);
  if (from == std::string::npos || to == std::string::npos) {
    *error = "no result in the page:\n" + dom.substr(0, 2000);
    return o;
  }
  std::istringstream in(html_unescape(dom.substr(from + open.size(), to - from - open.size())));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, '\t');) f.push_back(field);
    if (f.size() >= 1 && f[0] == "error") *error += line + "\n";
    if (f.size() == 7 && f[1] == "frame") {
      o.frames[f[0]][f[2]] = {std::stod(f[3]), std::stod(f[4]), f[5] == "1", f[6]};
    } else if (f.size() == 6 && f[1] == "frame") {  // an empty label
      o.frames[f[0]][f[2]] = {std::stod(f[3]), std::stod(f[4]), f[5] == "1", ""};
    } else if (f.size() >= 2) {
      o.values[f[0]][f[1]] = f.size() > 2 ? f[2] : "";
    }
  }
  return o;
}

// Every frame of the graph with its exact place (ns), from the same stacks.
struct Model {
  struct Node {
    uint64_t start, value;
  };
  std::map<std::string, Node> nodes;  // path "a;b;c"
  uint64_t total = 0;
  explicit Model(const std::vector<FlameStack>& stacks) {
    const report::FlameTree tree = report::build_flame_tree(stacks);
    total = tree.total();
    std::vector<std::string> path(tree.nodes.size());
    for (size_t i = 1; i < tree.nodes.size(); ++i) {
      const auto& n = tree.nodes[i];
      path[i] = (n.parent ? path[n.parent] + ";" : "") + n.frame->name;
      nodes[path[i]] = {n.start, n.value};
    }
  }
};

bool is_prefix(const std::string& path, const std::string& of) {
  return of == path || (of.size() > path.size() && of.compare(0, path.size(), path) == 0 && of[path.size()] == ';');
}

// Zoomed into `zoom` ("" for none): the zoomed frame and everything above it scaled to the
// full width, its ancestors full width, the rest hidden; labels as the renderer fits them.
void expect_frames(const Observed& o, const std::string& step, const Model& m, const std::string& zoom) {
  auto it = o.frames.find(step);
  ASSERT_NE(it, o.frames.end()) << "no frames for " << step;
  EXPECT_EQ(it->second.size(), m.nodes.size()) << step;
  const Model::Node* z = zoom.empty() ? nullptr : &m.nodes.at(zoom);
  for (const auto& [path, node] : m.nodes) {
    SCOPED_TRACE(step + ": " + path);
    auto f = it->second.find(path);
    ASSERT_NE(f, it->second.end());
    double x = kX0 + kWidth * static_cast<double>(node.start) / static_cast<double>(m.total);
    double w = kWidth * static_cast<double>(node.value) / static_cast<double>(m.total);
    bool visible = true;
    if (z && is_prefix(zoom, path)) {
      x = kX0 + kWidth * static_cast<double>(node.start - z->start) / static_cast<double>(z->value);
      w = kWidth * static_cast<double>(node.value) / static_cast<double>(z->value);
    } else if (z && is_prefix(path, zoom)) {
      x = kX0;
      w = kWidth;
    } else if (z) {
      visible = false;
    }
    EXPECT_EQ(f->second.visible, visible);
    if (!visible) continue;
    EXPECT_NEAR(f->second.x, x, 0.051);
    EXPECT_NEAR(f->second.width, w, 0.051);
    const std::string name = path.substr(path.rfind(';') == std::string::npos ? 0 : path.rfind(';') + 1);
    EXPECT_EQ(f->second.label, report::fit_label(name, w, kCharWidth));
  }
}

std::string value(const Observed& o, const std::string& step, const std::string& key) {
  auto s = o.values.find(step);
  if (s == o.values.end()) return "(no step " + step + ")";
  auto k = s->second.find(key);
  return k == s->second.end() ? "(no " + key + ")" : k->second;
}

void expect_search(const Observed& o, const std::string& step, const std::string& term, double share,
                   size_t matched_frames) {
  SCOPED_TRACE(step);
  EXPECT_EQ(value(o, step, "data-search-term"), term);
  EXPECT_NEAR(std::stod(value(o, step, "data-search-share")), share, 1e-6);
  EXPECT_EQ(value(o, step, "matched"), std::to_string(matched_frames));
  char text[64];
  snprintf(text, sizeof text, "Matched: %.2f%%", share);
  EXPECT_EQ(value(o, step, "matched-text").rfind(text, 0), 0u) << value(o, step, "matched-text");
}

void expect_no_search(const Observed& o, const std::string& step) {
  SCOPED_TRACE(step);
  EXPECT_EQ(value(o, step, "data-search-term"), "(none)");
  EXPECT_EQ(value(o, step, "data-search-share"), "(none)");
  EXPECT_EQ(value(o, step, "matched"), "0");
  EXPECT_EQ(value(o, step, "matched-text"), "");
}

size_t frames_matching(const Model& m, const std::string& pattern) {
  const std::regex re(pattern, std::regex::ECMAScript);
  size_t n = 0;
  for (const auto& [path, node] : m.nodes)
    n += std::regex_search(path.substr(path.rfind(';') == std::string::npos ? 0 : path.rfind(';') + 1), re);
  return n;
}

class FlamegraphInteraction : public ::testing::TestWithParam<std::string> {};

TEST_P(FlamegraphInteraction, ZoomSearchAndResetRunInTheBrowser) {
  TempDir dir, profile;
  const auto stacks = offwake_example();
  const std::string svg = write_graph(dir, stacks);
  const std::string page = dir.file("page.html");
  std::ofstream(page) << (GetParam() == "object" ? object_page() : inline_page(read_file(svg)));
  auto r = chromium_dump_dom(profile, page);
  ASSERT_EQ(r.status, 0) << r.err;
  std::string error;
  const Observed o = parse_result(r.out, &error);
  ASSERT_EQ(error, "");
  const Model m(stacks);

  EXPECT_EQ(value(o, "load", "api"), "function,function,function");
  expect_frames(o, "load", m, "");
  EXPECT_EQ(value(o, "load", "data-zoomed-name"), "(none)");
  EXPECT_EQ(value(o, "hover", "details"), "wait_reply: off-CPU 600.00 ms, 60.00% of the total");
  EXPECT_EQ(value(o, "unhover", "details"), "Click a frame to zoom in, Ctrl-F to search");

  expect_frames(o, "zoom-main", m, "app;main");
  EXPECT_EQ(value(o, "zoom-main", "data-zoomed-name"), "main");
  expect_frames(o, "zoom-lock", m, "app;main;wait_lock");  // a zoom inside a zoom
  EXPECT_EQ(value(o, "zoom-lock", "data-zoomed-name"), "wait_lock");
  expect_frames(o, "reset", m, "");
  EXPECT_EQ(value(o, "reset", "data-zoomed-name"), "(none)");
  EXPECT_EQ(value(o, "api-zoom", "result"), "true");
  expect_frames(o, "api-zoom", m, "logger;main;write_log");
  expect_frames(o, "api-reset", m, "");

  // Shares count each stack once, however many of its frames match.
  expect_search(o, "search-waker", "try_to_wake_up", expected_share(stacks, "try_to_wake_up"), 2);
  EXPECT_NEAR(std::stod(value(o, "search-waker", "share")), 85.0, 1e-9);
  expect_search(o, "search-nested", "^(main|wait_reply)$", expected_share(stacks, "^(main|wait_reply)$"),
                frames_matching(m, "^(main|wait_reply)$"));
  EXPECT_NEAR(std::stod(value(o, "search-nested", "share")), 100.0, 1e-9) << "counted once, not 160%";
  // Not a regular expression: searched as text.
  expect_search(o, "search-text", "[hardirq", expected_share(stacks, "\\[hardirq"), 1);
  expect_frames(o, "search-text", m, "");  // searching moves nothing

  EXPECT_EQ(value(o, "ctrl-f", "prevented"), "true");
  expect_search(o, "ctrl-f", "futex", expected_share(stacks, "futex"), frames_matching(m, "futex"));
  expect_no_search(o, "clear");
  expect_search(o, "search-control", "blk_", expected_share(stacks, "blk_"), 1);
  expect_no_search(o, "escape");
}

INSTANTIATE_TEST_SUITE_P(Embeddings, FlamegraphInteraction, ::testing::Values("object", "inline"));

}  // namespace
}  // namespace offwake::test
