#include "report/xml_text.h"

#include <cmath>
#include <cstdint>

#include "report/utf8.h"

namespace offwake::report {

void append_xml_escaped(std::string& out, std::string_view text) {
  out.reserve(out.size() + text.size());
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    const auto u = static_cast<uint8_t>(c);
    if (u >= 0x80) {
      const size_t n = utf8_length(text.substr(i));
      // U+FFFE and U+FFFF are well-formed UTF-8 but not XML characters.
      const bool non_char = n == 3 && u == 0xEF && static_cast<uint8_t>(text[i + 1]) == 0xBF &&
                            static_cast<uint8_t>(text[i + 2]) >= 0xBE;
      if (n == 0 || non_char) {
        out += kReplacementChar;
        i += n ? n : 1;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default:
        if (u < 0x20) out += kReplacementChar;
        else out += c;
    }
    ++i;
  }
}

std::string fit_label(std::string_view name, double width_px, double char_px) {
  const double room = std::floor((width_px - 6) / char_px);  // 3 px of padding each side
  if (room < 3) return "";
  const auto fits = static_cast<size_t>(room);
  // Byte offsets where characters start; a continuation byte (10xxxxxx) starts none.
  size_t chars = 0, cut = std::string_view::npos;
  for (size_t i = 0; i < name.size(); ++i) {
    if ((static_cast<uint8_t>(name[i]) & 0xC0) == 0x80) continue;
    if (chars == fits - 2) cut = i;
    ++chars;
  }
  if (chars <= fits) return std::string(name);
  return std::string(name.substr(0, cut)) + "..";
}

}  // namespace offwake::report
