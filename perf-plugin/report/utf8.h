// UTF-8 as the outputs need it: names are arbitrary bytes (a comm may be any), while an SVG
// document and a profile.proto's strings must be UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace offwake::report {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 if it is not one.
size_t utf8_length(std::string_view s);

// `s` with every byte that starts no well-formed sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view s);

}  // namespace offwake::report
