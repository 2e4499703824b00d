#include "flamegraph/svg_doc.h"

#include <cstdlib>
#include <sstream>

#include "support/run.h"

namespace offwake::test {

namespace {

std::string decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::strtoul(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t at; (at = s.find(sep, from)) != std::string::npos; from = at + 1) parts.push_back(s.substr(from, at - from));
  parts.push_back(s.substr(from));
  return parts;
}

}  // namespace

const SvgFrame* SvgDoc::find(const std::vector<std::string>& path) const {
  for (const SvgFrame& f : frames)
    if (f.path == path) return &f;
  return nullptr;
}

std::vector<const SvgFrame*> SvgDoc::named(const std::string& name) const {
  std::vector<const SvgFrame*> out;
  for (const SvgFrame& f : frames)
    if (f.name() == name) out.push_back(&f);
  return out;
}

double SvgDoc::attr_number(const std::string& name) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? -1 : std::strtod(it->second.c_str(), nullptr);
}

std::optional<SvgDoc> parse_svg(const std::string& file, std::string* error) {
  RunResult r = run("python3 " OFFWAKE_SOURCE_DIR "/tests/flamegraph/svg_frames.py '" + file + "'");
  if (r.status != 0) {
    *error = "svg_frames.py: " + r.err;
    return std::nullopt;
  }
  SvgDoc doc;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = split(line, '\t');
    std::vector<std::string> path;  // split before decoding: a name may hold U+001F
    if (f.size() > 1) path = split(f[1], '\x1f');
    for (auto& name : path) name = decode(name);
    for (auto& field : f) field = decode(field);
    if (f[0] == "svg") {
      for (size_t i = 1; i < f.size(); ++i) {
        const size_t eq = f[i].find('=');
        doc.attrs[f[i].substr(0, eq)] = f[i].substr(eq + 1);
      }
    } else if (f[0] == "text" && f.size() == 3) {
      doc.texts.emplace_back(f[1], f[2]);
    } else if (f[0] == "legend" && f.size() == 4) {
      doc.legend.push_back({f[1], f[2], f[3]});
    } else if (f[0] == "frame" && f.size() == 11) {
      SvgFrame fr;
      fr.path = std::move(path);
      fr.kind = f[2];
      fr.value = std::strtoull(f[3].c_str(), nullptr, 10);
      fr.skip = std::strtoull(f[4].c_str(), nullptr, 10);
      fr.x = std::strtod(f[5].c_str(), nullptr);
      fr.y = std::strtod(f[6].c_str(), nullptr);
      fr.width = std::strtod(f[7].c_str(), nullptr);
      fr.fill = f[8];
      fr.label = f[9];
      fr.title = f[10];
      doc.frames.push_back(std::move(fr));
    } else {
      *error = "unexpected line from svg_frames.py: " + line;
      return std::nullopt;
    }
  }
  return doc;
}

}  // namespace offwake::test
