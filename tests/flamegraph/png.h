// Just enough of PNG to look at a browser's screenshot: 8-bit RGB or RGBA, not interlaced
// (what Chromium writes), decoded with zlib and the five scanline filters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace offwake::test {

struct Image {
  uint32_t width = 0, height = 0;
  std::vector<uint32_t> rgb;  // 0xRRGGBB per pixel, row by row (alpha dropped)
};

Result<Image> decode_png(const std::string& bytes);

}  // namespace offwake::test
