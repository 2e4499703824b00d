#include "flamegraph/png.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>

namespace offwake::test {

namespace {

uint32_t be32(const std::string& s, size_t at) {
  const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(s[at + i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

uint8_t paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return static_cast<uint8_t>(a);
  return static_cast<uint8_t>(pb <= pc ? b : c);
}

// Undoes the filter of each scanline in place (PNG spec, section 9).
Status unfilter(std::vector<uint8_t>& data, uint32_t height, size_t stride, size_t bpp) {
  std::vector<uint8_t> prev(stride, 0);
  for (uint32_t y = 0; y < height; ++y) {
    uint8_t* row = &data[y * (stride + 1)];
    const uint8_t filter = row[0];
    uint8_t* px = row + 1;
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= bpp ? px[i - bpp] : 0, b = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
      switch (filter) {
        case 0: break;
        case 1: px[i] = static_cast<uint8_t>(px[i] + a); break;
        case 2: px[i] = static_cast<uint8_t>(px[i] + b); break;
        case 3: px[i] = static_cast<uint8_t>(px[i] + (a + b) / 2); break;
        case 4: px[i] = static_cast<uint8_t>(px[i] + paeth(a, b, c)); break;
        default: return Error("PNG: unknown filter " + std::to_string(filter));
      }
    }
    std::memcpy(prev.data(), px, stride);
  }
  return ok_status();
}

}  // namespace

Result<Image> decode_png(const std::string& bytes) {
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  if (bytes.size() < 8 || bytes.compare(0, 8, kSignature, 8) != 0) return Error("not a PNG file");
  Image img;
  uint8_t depth = 0, color = 0, interlace = 0;
  std::string idat;
  for (size_t at = 8; at + 12 <= bytes.size();) {
    const uint32_t len = be32(bytes, at);
    const std::string type = bytes.substr(at + 4, 4);
    if (at + 12 + len > bytes.size()) return Error("PNG: truncated " + type + " chunk");
    const size_t body = at + 8;
    if (type == "IHDR") {
      if (len < 13) return Error("PNG: short IHDR");
      img.width = be32(bytes, body);
      img.height = be32(bytes, body + 4);
      depth = static_cast<uint8_t>(bytes[body + 8]);
      color = static_cast<uint8_t>(bytes[body + 9]);
      interlace = static_cast<uint8_t>(bytes[body + 12]);
    } else if (type == "IDAT") {
      idat.append(bytes, body, len);
    } else if (type == "IEND") {
      break;
    }
    at = body + len + 4;  // past the CRC
  }
  if (depth != 8 || (color != 2 && color != 6) || interlace != 0)
    return Error("PNG: only 8-bit RGB or RGBA, not interlaced (depth " + std::to_string(depth) + ", colour type " +
                 std::to_string(color) + ")");
  const size_t bpp = color == 6 ? 4 : 3, stride = img.width * bpp;
  std::vector<uint8_t> data(img.height * (stride + 1));
  uLongf size = data.size();
  if (uncompress(data.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      size != data.size())
    return Error("PNG: bad image data");
  if (Status s = unfilter(data, img.height, stride, bpp); !s) return s.error();
  img.rgb.reserve(static_cast<size_t>(img.width) * img.height);
  for (uint32_t y = 0; y < img.height; ++y)
    for (uint32_t x = 0; x < img.width; ++x) {
      const uint8_t* p = &data[y * (stride + 1) + 1 + x * bpp];
      img.rgb.push_back(static_cast<uint32_t>(p[0]) << 16 | static_cast<uint32_t>(p[1]) << 8 | p[2]);
    }
  return img;
}

}  // namespace offwake::test
