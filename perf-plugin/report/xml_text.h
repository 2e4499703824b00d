// Text as an SVG document can hold it. Symbol and thread names are arbitrary bytes (C++
// templates bring '<' and '&', a comm may be any bytes), and one bad byte makes an XML
// parser, and so the browser, refuse the whole document.
#pragma once

#include <string>
#include <string_view>

namespace offwake::report {

// Appends `text` escaped for character data and for attribute values quoted with '"'. Bytes
// that are not UTF-8, and characters XML 1.0 cannot hold (most control characters, U+FFFE,
// U+FFFF), become U+FFFD; tab, newline and carriage return become character references so
// that attribute values keep them.
void append_xml_escaped(std::string& out, std::string_view text);

inline std::string xml_escaped(std::string_view text) {
  std::string out;
  append_xml_escaped(out, text);
  return out;
}

// The label of a frame `width_px` wide in a font whose characters are `char_px` wide: the
// whole name, or its start followed by "..", or "" when fewer than 3 characters fit. Counts
// UTF-8 characters and cuts between them.
std::string fit_label(std::string_view name, double width_px, double char_px);

}  // namespace offwake::report
