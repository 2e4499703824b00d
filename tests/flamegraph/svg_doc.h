// A flame graph SVG as the tests see it: parsed by Python's XML parser (svg_frames.py), so a
// document that is not well-formed XML fails, then its frames with their tree paths and
// numbers, its title lines and its legend.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace offwake::test {

struct SvgFrame {
  std::vector<std::string> path;  // data-name of the frame and its ancestors, bottom first
  std::string kind, fill, label, title;
  uint64_t value = 0, skip = 0;
  double x = 0, y = 0, width = 0;
  const std::string& name() const { return path.back(); }
};

struct SvgLegend {
  std::string kind, fill, label;
};

struct SvgDoc {
  std::map<std::string, std::string> attrs;  // of the <svg> element
  std::vector<std::pair<std::string, std::string>> texts;  // (class, content): title, subtitles
  std::vector<SvgLegend> legend;
  std::vector<SvgFrame> frames;  // in document order

  const SvgFrame* find(const std::vector<std::string>& path) const;
  std::vector<const SvgFrame*> named(const std::string& name) const;
  double attr_number(const std::string& name) const;
};

// The document in `file`; nullopt with the parser's complaint in *error.
std::optional<SvgDoc> parse_svg(const std::string& file, std::string* error);

}  // namespace offwake::test
