// The protocol buffer wire format, write side only: enough to emit a message whose schema is
// fixed in code (pprof's profile.proto) without libprotobuf or generated code.
//
// A message is a sequence of (tag, value) pairs, tag = field number << 3 | wire type. Scalars
// are varints (wire type 0); strings, bytes, embedded messages and packed repeated scalars are
// a varint length and the bytes (wire type 2). Fields are written in the order they are added.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "perfdata/bytes.h"

namespace offwake::report {

class ProtoWriter {
 public:
  // A uint64, int64 or bool field. proto3 does not encode a scalar that has its default value
  // (0), so a zero writes nothing; readers take an absent field as 0.
  void uint_field(uint32_t field, uint64_t value) {
    if (!value) return;
    tag(field, kVarint);
    varint(value);
  }
  // int64 is the two's complement as a uint64: a negative value takes ten bytes.
  void int_field(uint32_t field, int64_t value) { uint_field(field, static_cast<uint64_t>(value)); }
  void bool_field(uint32_t field, bool value) { uint_field(field, value ? 1 : 0); }

  // A string or bytes field, always written: an element of a repeated string (pprof's string
  // table starts with "") is there even when empty.
  void string_field(uint32_t field, std::string_view s) {
    length_delimited(field, reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }

  // An embedded message, always written: a present but empty message differs from none.
  void message_field(uint32_t field, const ProtoWriter& message) {
    length_delimited(field, message.buf_.data(), message.buf_.size());
  }

  // A packed repeated scalar field (the proto3 default for repeated scalars): one tag, the
  // byte length, then the varints. Nothing for an empty list.
  void packed_field(uint32_t field, std::span<const uint64_t> values) {
    if (values.empty()) return;
    size_t size = 0;
    for (uint64_t v : values) size += varint_size(v);
    tag(field, kLengthDelimited);
    varint(size);
    for (uint64_t v : values) varint(v);
  }

  // The fields of `other` after these: a message is its fields, and readers take them in any
  // order, so parts of one message can be written apart and joined.
  void append(const ProtoWriter& other) { buf_.insert(buf_.end(), other.buf_.begin(), other.buf_.end()); }

  const perfdata::Bytes& bytes() const { return buf_; }
  perfdata::Bytes take() { return std::move(buf_); }

  static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
      v >>= 7;
      ++n;
    }
    return n;
  }

 private:
  enum WireType : uint8_t { kVarint = 0, kLengthDelimited = 2 };

  void tag(uint32_t field, WireType type) { varint(static_cast<uint64_t>(field) << 3 | type); }

  // Seven bits at a time, least significant first; the high bit says more follow.
  void varint(uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<uint8_t>(v));
  }

  void length_delimited(uint32_t field, const uint8_t* data, size_t size) {
    tag(field, kLengthDelimited);
    varint(size);
    buf_.insert(buf_.end(), data, data + size);
  }

  perfdata::Bytes buf_;
};

}  // namespace offwake::report
