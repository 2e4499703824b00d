// Where perf.data bytes go: memory in tests, a file or a pipe in production.
#pragma once

#include <span>
#include <string>

#include "perfdata/bytes.h"
#include "util/fd.h"
#include "util/result.h"

namespace offwake::perfdata {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual Status write(std::span<const uint8_t> data) = 0;
  // Overwrites earlier bytes; only for seekable sinks (file mode).
  virtual Status write_at(uint64_t offset, std::span<const uint8_t> data) = 0;
  virtual Status flush() = 0;
  virtual bool seekable() const = 0;
  virtual uint64_t position() const = 0;
};

class MemorySink : public ByteSink {
 public:
  explicit MemorySink(bool seekable = true) : seekable_(seekable) {}
  Status write(std::span<const uint8_t> data) override;
  Status write_at(uint64_t offset, std::span<const uint8_t> data) override;
  Status flush() override { return ok_status(); }
  bool seekable() const override { return seekable_; }
  uint64_t position() const override { return data_.size(); }
  const Bytes& data() const { return data_; }

 private:
  Bytes data_;
  bool seekable_;
};

// Buffered writes to a file descriptor; `what` names it in errors.
class FdSink : public ByteSink {
 public:
  FdSink(UniqueFd fd, std::string what, bool seekable);
  ~FdSink() override;
  Status write(std::span<const uint8_t> data) override;
  Status write_at(uint64_t offset, std::span<const uint8_t> data) override;
  Status flush() override;
  bool seekable() const override { return seekable_; }
  uint64_t position() const override { return position_; }
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  std::string what_;
  bool seekable_;
  uint64_t position_ = 0;
  Bytes buffer_;
};

}  // namespace offwake::perfdata
