#include "report/xml_text.h"

#include <cmath>
#include <cstdint>

namespace offwake::report {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 if it is not one.
size_t utf8_length(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const auto cont = [&](size_t i, uint8_t lo = 0x80, uint8_t hi = 0xBF) {
    return i < s.size() && b(i) >= lo && b(i) <= hi;
  };
  const uint8_t c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const uint8_t lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const uint8_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

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
        out += kReplacement;
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
        if (u < 0x20) out += kReplacement;
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
