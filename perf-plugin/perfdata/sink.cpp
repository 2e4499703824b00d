#include "perfdata/sink.h"

#include <unistd.h>

#include <cerrno>

namespace offwake::perfdata {

namespace {
constexpr size_t kBufferSize = 1 << 20;

Status write_all(int fd, const uint8_t* p, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno("writing " + what);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return ok_status();
}
}  // namespace

Status MemorySink::write(std::span<const uint8_t> data) {
  data_.insert(data_.end(), data.begin(), data.end());
  return ok_status();
}

Status MemorySink::write_at(uint64_t offset, std::span<const uint8_t> data) {
  if (!seekable_) return Error("memory sink is not seekable", ESPIPE);
  if (offset + data.size() > data_.size()) data_.resize(offset + data.size());
  std::copy(data.begin(), data.end(), data_.begin() + static_cast<ptrdiff_t>(offset));
  return ok_status();
}

FdSink::FdSink(UniqueFd fd, std::string what, bool seekable)
    : fd_(std::move(fd)), what_(std::move(what)), seekable_(seekable) {
  buffer_.reserve(kBufferSize);
}

FdSink::~FdSink() { (void)flush(); }

Status FdSink::write(std::span<const uint8_t> data) {
  if (buffer_.size() + data.size() > kBufferSize) {
    OFFWAKE_TRY(flush());
    if (data.size() >= kBufferSize) {
      OFFWAKE_TRY(write_all(fd_.get(), data.data(), data.size(), what_));
      position_ += data.size();
      return ok_status();
    }
  }
  buffer_.insert(buffer_.end(), data.begin(), data.end());
  position_ += data.size();
  return ok_status();
}

Status FdSink::write_at(uint64_t offset, std::span<const uint8_t> data) {
  if (!seekable_) return Error("writing " + what_ + ": not seekable", ESPIPE, ErrorKind::kIo);
  OFFWAKE_TRY(flush());
  const uint8_t* p = data.data();
  size_t n = data.size();
  while (n > 0) {
    ssize_t w = ::pwrite(fd_.get(), p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno("writing " + what_);
    }
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return ok_status();
}

Status FdSink::flush() {
  if (buffer_.empty() || !fd_.valid()) return ok_status();
  auto s = write_all(fd_.get(), buffer_.data(), buffer_.size(), what_);
  buffer_.clear();
  return s;
}

}  // namespace offwake::perfdata
