// Text from a file, fit to be echoed in a message: a corrupt file's bytes must not reach the
// terminal as they are (escape sequences, broken lines).
#pragma once

#include <string>
#include <string_view>

namespace offwake {

// `text` in single quotes, each byte outside printable ASCII (and the backslash) as \xNN.
std::string quote_text(std::string_view text);

}  // namespace offwake
