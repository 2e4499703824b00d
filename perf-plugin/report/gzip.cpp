#include "report/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <string>

namespace offwake::report {

namespace {

std::string zlib_error(const char* call, int rc, const z_stream& z) {
  return std::string(call) + ": " + (z.msg ? z.msg : zError(rc));
}

// A z_stream set up for deflate; deflateEnd runs exactly when deflateInit2 succeeded.
class Deflater {
 public:
  Deflater() = default;
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  ~Deflater() {
    if (ready_) deflateEnd(&z_);
  }

  Status init() {
    // windowBits 15 + 16: the largest window, with a gzip header and trailer instead of zlib's.
    const int rc = deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK) return Error(zlib_error("deflateInit2", rc, z_));
    ready_ = true;
    return ok_status();
  }

  z_stream& stream() { return z_; }

 private:
  z_stream z_{};
  bool ready_ = false;
};

}  // namespace

Result<perfdata::Bytes> gzip(std::span<const uint8_t> data) {
  Deflater deflater;
  OFFWAKE_TRY(deflater.init());
  z_stream& z = deflater.stream();
  // zlib counts in uInt (32 bits): the input goes in pieces, the output grows by chunks.
  constexpr size_t kChunk = 256 * 1024;
  perfdata::Bytes out;
  size_t fed = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0 && fed < data.size()) {
      const size_t n = std::min<size_t>(data.size() - fed, UINT_MAX);
      z.next_in = const_cast<Bytef*>(data.data() + fed);  // zlib does not write to its input
      z.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    const size_t used = out.size();
    out.resize(used + kChunk);
    z.next_out = out.data() + used;
    z.avail_out = kChunk;
    rc = deflate(&z, fed == data.size() ? Z_FINISH : Z_NO_FLUSH);
    out.resize(used + kChunk - z.avail_out);
    if (rc != Z_OK && rc != Z_STREAM_END) return Error(zlib_error("deflate", rc, z));
  }
  return out;
}

}  // namespace offwake::report
