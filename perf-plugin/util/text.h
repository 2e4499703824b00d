// Small text helpers shared by the readers of what other programs print (/proc files, perf).
#pragma once

#include <string>
#include <string_view>

namespace offwake {

// `text` without the spaces, tabs and line ends around it.
inline std::string trimmed(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return "";
  return std::string(text.substr(first, text.find_last_not_of(kSpace) - first + 1));
}

}  // namespace offwake
