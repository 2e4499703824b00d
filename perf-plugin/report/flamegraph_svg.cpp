// render_flamegraph_svg: the flame tree laid out and written as one SVG document that carries
// its own style and script (flamegraph.css and flamegraph.js, embedded at build time), so a
// browser fetches nothing. The frames' attributes are what the script reads, see flamegraph.js.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iterator>

#include "report/flame_colors.h"
#include "report/flame_tree.h"
#include "report/flamegraph.h"
#include "report/flamegraph_assets.h"
#include "report/stdio_report.h"
#include "report/xml_text.h"

namespace offwake::report {

namespace {

static_assert(assets::kFlameGraphScript.find("]]>") == std::string_view::npos, "the script goes in CDATA");
static_assert(assets::kFlameGraphStyle.find("]]>") == std::string_view::npos, "the style goes in CDATA");

constexpr double kMargin = 10;
constexpr int kFrameHeight = 16;
// 11 px DejaVu Sans Mono advances 6.62 px; a little more so that a label never overflows in a
// fallback monospace font.
constexpr double kCharWidth = 6.7;
constexpr const char* kHint = "Click a frame to zoom in, Ctrl-F to search";

// Coordinates with at most one decimal: no screen shows more, and they are much of the file.
void append_number(std::string& out, double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 1);
  std::string_view s(buf, static_cast<size_t>(end - buf));
  if (s.size() > 2 && s.ends_with(".0")) s.remove_suffix(2);
  out += s;
}

std::string percent(uint64_t part, uint64_t whole) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.2f%%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return buf;
}

// What the drawn tree needs besides its nodes: how tall it is, which kinds the legend shows.
struct Layout {
  uint32_t max_depth = 0;
  bool kind_seen[std::size(kAllFlameKinds)] = {};
};

Layout lay_out(const FlameTree& tree) {
  Layout l;
  for (size_t i = 1; i < tree.nodes.size(); ++i) {
    l.max_depth = std::max(l.max_depth, tree.nodes[i].depth);
    l.kind_seen[static_cast<size_t>(tree.nodes[i].frame->kind)] = true;
  }
  return l;
}

// The rows of the document, top to bottom.
struct Geometry {
  double width = 0, graph_width = 0;
  int title_y = 0, first_sub_y = 0, legend_y = 0, controls_y = 0, graph_bottom = 0, details_y = 0, height = 0;
};

struct LegendItem {
  FlameKind kind;
  double x;
  int row;
};

std::vector<LegendItem> legend_items(const Layout& l, double width) {
  std::vector<LegendItem> items;
  double x = kMargin;
  int row = 0;
  for (FlameKind k : kAllFlameKinds) {
    if (!l.kind_seen[static_cast<size_t>(k)]) continue;
    const double advance = 16 + std::string_view(legend_label(k)).size() * kCharWidth + 14;
    if (x > kMargin && x + advance > width - kMargin) {
      x = kMargin;
      ++row;
    }
    items.push_back({k, x, row});
    x += advance;
  }
  return items;
}

Geometry geometry(const FlameGraphOptions& o, const Layout& l, int legend_rows) {
  Geometry g;
  g.width = std::max(o.width_px, 200);
  g.graph_width = g.width - 2 * kMargin;
  g.title_y = 24;
  g.first_sub_y = g.title_y + 18;
  g.legend_y = g.first_sub_y + 17 * static_cast<int>(o.subtitle.size()) + 4;
  g.controls_y = g.legend_y + 16 * std::max(legend_rows, 1) + 8;
  const int graph_top = g.controls_y + 10;
  g.graph_bottom = graph_top + kFrameHeight * static_cast<int>(std::max<uint32_t>(l.max_depth, 1));
  g.details_y = g.graph_bottom + 18;
  g.height = g.details_y + 10;
  return g;
}

// A control: a labelled box the script listens to; `state` is "off" (dimmed) or "h" (hidden).
void append_button(std::string& out, const char* id, std::string_view label, double x, int baseline,
                   std::string_view state) {
  const double w = static_cast<double>(label.size()) * kCharWidth + 12;
  out += "<g id=\"";
  out += id;
  out += "\" class=\"ctl";
  if (!state.empty()) (out += ' ') += state;
  out += "\"><rect x=\"";
  append_number(out, x);
  out += "\" y=\"" + std::to_string(baseline - 13) + "\" width=\"";
  append_number(out, w);
  out += "\" height=\"18\" rx=\"3\"/><text x=\"";
  append_number(out, x + 6);
  out += "\" y=\"" + std::to_string(baseline) + "\">";
  out += label;
  out += "</text></g>\n";
}

void append_header(std::string& out, const FlameGraphOptions& o, const Geometry& g, uint64_t total,
                   const std::vector<LegendItem>& legend) {
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"";
  append_number(out, g.width);
  out += "\" height=\"" + std::to_string(g.height) + "\" viewBox=\"0 0 ";
  append_number(out, g.width);
  out += " " + std::to_string(g.height) + "\" data-total=\"" + std::to_string(total) + "\" data-value-name=\"";
  append_xml_escaped(out, o.value_name);
  out += "\" data-graph-x=\"";
  append_number(out, kMargin);
  out += "\" data-graph-width=\"";
  append_number(out, g.graph_width);
  out += "\" data-char-width=\"";
  append_number(out, kCharWidth);
  out += "\">\n<style><![CDATA[\n";
  out += assets::kFlameGraphStyle;
  out += "]]></style>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";

  const std::string center = std::to_string(static_cast<int>(g.width / 2));
  out += "<text class=\"title\" x=\"" + center + "\" y=\"" + std::to_string(g.title_y) + "\">";
  append_xml_escaped(out, o.title);
  out += "</text>\n";
  for (size_t i = 0; i < o.subtitle.size(); ++i) {
    const int y = g.first_sub_y + 17 * static_cast<int>(i);
    out += "<text class=\"sub\" x=\"" + center + "\" y=\"" + std::to_string(y) + "\">";
    append_xml_escaped(out, o.subtitle[i]);
    out += "</text>\n";
  }

  out += "<g id=\"legend\">\n";
  for (const LegendItem& item : legend) {
    const int y = g.legend_y + 16 * item.row;
    out += "<g data-legend-kind=\"";
    out += kind_name(item.kind);
    out += "\"><rect x=\"";
    append_number(out, item.x);
    out += "\" y=\"" + std::to_string(y - 10) + "\" width=\"12\" height=\"12\" fill=\"" + legend_color(item.kind) +
           "\"/><text x=\"";
    append_number(out, item.x + 16);
    out += "\" y=\"" + std::to_string(y) + "\">";
    append_xml_escaped(out, legend_label(item.kind));
    out += "</text></g>\n";
  }
  out += "</g>\n";

  // Reset zoom on the left; the search's result, "Clear search" (while searching) and
  // "Search" on the right.
  append_button(out, "reset-zoom", "Reset zoom", kMargin, g.controls_y, "off");
  const double search_w = std::string_view("Search (Ctrl-F)").size() * kCharWidth + 12;
  const double search_x = g.width - kMargin - search_w;
  const double clear_x = search_x - 8 - (std::string_view("Clear search").size() * kCharWidth + 12);
  append_button(out, "search", "Search (Ctrl-F)", search_x, g.controls_y, "");
  append_button(out, "clear-search", "Clear search", clear_x, g.controls_y, "h");
  out += "<text id=\"matched\" x=\"";
  append_number(out, clear_x - 8);
  out += "\" y=\"" + std::to_string(g.controls_y) + "\"></text>\n";
}

// One <g> per node, nested as the tree is: a frame's children inside its element. A frame
// whose left neighbour was too narrow to draw says how much time was left out before it
// (data-skip), so that the script can place it from the values alone.
void append_frames(std::string& out, const FlameTree& tree, const Geometry& g, double px_per_ns,
                   const std::string& value_name) {
  const uint64_t total = tree.total();
  std::vector<uint64_t> cursor(tree.nodes.size());  // right edge of a node's last child so far
  for (size_t i = 0; i < tree.nodes.size(); ++i) cursor[i] = tree.nodes[i].start;
  out += "<g id=\"frames\">\n";
  uint32_t open = 0;  // depth of the innermost open <g>
  for (size_t i = 1; i < tree.nodes.size(); ++i) {
    const FlameNode& node = tree.nodes[i];
    const uint64_t skip = node.start - cursor[node.parent];
    cursor[node.parent] = node.start + node.value;
    if (open >= node.depth) {
      for (; open >= node.depth; --open) out += "</g>";
      out += '\n';
    }
    open = node.depth;

    const std::string& name = node.frame->name;
    const double x = kMargin + static_cast<double>(node.start) * px_per_ns;
    const double w = static_cast<double>(node.value) * px_per_ns;
    const int y = g.graph_bottom - static_cast<int>(node.depth) * kFrameHeight;
    out += "<g class=\"f\" data-name=\"";
    append_xml_escaped(out, name);
    out += "\" data-kind=\"";
    out += kind_name(node.frame->kind);
    out += "\" data-value=\"" + std::to_string(node.value);
    if (skip) out += "\" data-skip=\"" + std::to_string(skip);
    out += "\"><title>";
    append_xml_escaped(out, name);
    out += " (" + value_name + " " + human_ns(node.value) + ", " + percent(node.value, total) + ")</title><rect x=\"";
    append_number(out, x);
    out += "\" y=\"" + std::to_string(y) + "\" width=\"";
    append_number(out, w);
    out += "\" height=\"" + std::to_string(kFrameHeight - 1) + "\" fill=\"";
    out += frame_color(node.frame->kind, name) + "\"/>";
    if (const std::string label = fit_label(name, w, kCharWidth); !label.empty()) {
      out += "<text x=\"";
      append_number(out, x + 3);
      out += "\" y=\"" + std::to_string(y + 12) + "\">";
      append_xml_escaped(out, label);
      out += "</text>";
    }
    out += '\n';
  }
  for (; open > 0; --open) out += "</g>";
  out += "</g>\n";
}

}  // namespace

std::string render_flamegraph_svg(const std::vector<FlameStack>& stacks, const FlameGraphOptions& options) {
  uint64_t total = 0;
  for (const FlameStack& s : stacks) total += s.value;
  const double graph_width = std::max(options.width_px, 200) - 2 * kMargin;  // room for the controls
  const double px_per_ns = total ? graph_width / static_cast<double>(total) : 0;
  // Frames narrower than min_width_px are not drawn: never made, in fact.
  const double min_value = px_per_ns > 0 ? options.min_width_px / px_per_ns : 0;
  const FlameTree tree = build_flame_tree(stacks, min_value);
  const Layout layout = lay_out(tree);
  const std::vector<LegendItem> legend = legend_items(layout, std::max(options.width_px, 200));
  const Geometry g = geometry(options, layout, legend.empty() ? 1 : legend.back().row + 1);

  std::string out;
  // About 250 bytes a frame; growing by doubling would copy a large document several times.
  out.reserve(8192 + assets::kFlameGraphScript.size() + 250 * tree.nodes.size());
  append_header(out, options, g, total, legend);
  std::string value_name;
  append_xml_escaped(value_name, options.value_name);
  append_frames(out, tree, g, px_per_ns, value_name);
  out += "<text id=\"details\" x=\"";
  append_number(out, kMargin);
  out += "\" y=\"" + std::to_string(g.details_y) + "\">";
  out += total ? kHint : "No samples: nothing to draw";
  out += "</text>\n<script><![CDATA[\n";
  out += assets::kFlameGraphScript;
  out += "]]></script>\n</svg>\n";
  return out;
}

}  // namespace offwake::report
