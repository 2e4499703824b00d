// Little helpers to build and parse native-endian byte strings with bounds checks.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace offwake::perfdata {

using Bytes = std::vector<uint8_t>;

class ByteWriter {
 public:
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put_bytes(&v, sizeof(T));
  }
  // Grows, then copies: GCC 12 takes vector::insert of a few bytes for an overflow
  // (-Wstringop-overflow, a false positive that filled a fresh build's output).
  void put_bytes(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = buf_.size();
    buf_.resize(at + n);
    std::memcpy(buf_.data() + at, p, n);
  }
  void put_zeros(size_t n) { buf_.insert(buf_.end(), n, 0); }
  // NUL-terminated, zero-padded to a multiple of `align` bytes.
  void put_padded_string(std::string_view s, size_t align);
  // perf_header_string: u32 len, then the string NUL-padded to kNameAlign.
  void put_header_string(std::string_view s);
  void pad_to(size_t align) { put_zeros((align - buf_.size() % align) % align); }

  size_t size() const { return buf_.size(); }
  Bytes& bytes() { return buf_; }
  Bytes take() { return std::move(buf_); }
  // Overwrites a value already written at `offset`.
  template <typename T>
  void patch(size_t offset, const T& v) {
    std::memcpy(buf_.data() + offset, &v, sizeof(T));
  }

 private:
  Bytes buf_;
};

class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> data, std::string what) : data_(data), what_(std::move(what)) {}

  template <typename T>
  Result<T> get() {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return short_read(sizeof(T));
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  // Reads into an existing variable: OFFWAKE_TRY(r.read(x)).
  template <typename T>
  Status read(T& dst) {
    auto v = get<T>();
    if (!v) return v.error();
    dst = *v;
    return ok_status();
  }
  Result<std::span<const uint8_t>> get_bytes(size_t n);
  // A NUL-padded string field of exactly n bytes.
  Result<std::string> get_fixed_string(size_t n);
  // perf_header_string.
  Result<std::string> get_header_string();
  Status skip(size_t n);

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }

 private:
  Error short_read(size_t wanted) const;

  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  std::string what_;
};

}  // namespace offwake::perfdata
