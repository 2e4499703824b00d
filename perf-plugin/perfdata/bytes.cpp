#include "perfdata/bytes.h"

#include "perfdata/format.h"

namespace offwake::perfdata {

void ByteWriter::put_padded_string(std::string_view s, size_t align) {
  size_t n = align_to(s.size() + 1, align);
  put_bytes(s.data(), s.size());
  put_zeros(n - s.size());
}

void ByteWriter::put_header_string(std::string_view s) {
  uint32_t len = static_cast<uint32_t>(align_to(s.size() + 1, kNameAlign));
  put(len);
  put_padded_string(s, kNameAlign);
}

Error ByteReader::short_read(size_t wanted) const {
  return Error::bad_input(what_ + ": truncated (wanted " + std::to_string(wanted) + " bytes at offset " +
               std::to_string(pos_) + ", " + std::to_string(remaining()) + " left)");
}

Result<std::span<const uint8_t>> ByteReader::get_bytes(size_t n) {
  if (remaining() < n) return short_read(n);
  auto s = data_.subspan(pos_, n);
  pos_ += n;
  return s;
}

Result<std::string> ByteReader::get_fixed_string(size_t n) {
  auto b = get_bytes(n);
  if (!b) return b.error();
  const char* p = reinterpret_cast<const char*>(b->data());
  return std::string(p, strnlen(p, n));
}

Result<std::string> ByteReader::get_header_string() {
  auto len = get<uint32_t>();
  if (!len) return len.error();
  return get_fixed_string(*len);
}

Status ByteReader::skip(size_t n) {
  if (remaining() < n) return short_read(n);
  pos_ += n;
  return ok_status();
}

}  // namespace offwake::perfdata
