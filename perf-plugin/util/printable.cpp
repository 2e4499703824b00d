#include "util/printable.h"

namespace offwake {

std::string quote_text(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  out.reserve(text.size() + 2);
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out + "'";
}

}  // namespace offwake
