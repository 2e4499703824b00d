// PerfDataReader: reads what PerfDataWriter (or perf record) writes, file or pipe format.
// Truncated or corrupt input yields an Error naming the offset, never a crash.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "perfdata/features.h"
#include "perfdata/records.h"
#include "perfdata/writer.h"
#include "util/fd.h"

namespace offwake::perfdata {

// Sequential or positioned reads from a file, a pipe or memory.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes; 0 at the end.
  virtual Result<size_t> read(void* buf, size_t n) = 0;
  virtual Status pread(void* buf, size_t n, uint64_t offset) = 0;  // seekable sources only
  virtual bool seekable() const = 0;
  virtual uint64_t size() const = 0;  // seekable sources only
};

class PerfDataReader {
 public:
  // `path` "-" reads standard input.
  static Result<PerfDataReader> open(const std::string& path);
  static Result<PerfDataReader> from_fd(UniqueFd fd, std::string what);
  static Result<PerfDataReader> from_memory(Bytes data);

  PerfDataReader(PerfDataReader&&) noexcept;
  PerfDataReader& operator=(PerfDataReader&&) noexcept;
  ~PerfDataReader();

  Mode mode() const { return mode_; }
  // Feature sections. In pipe mode they arrive as records, so this fills in while reading.
  const FileInfo& info() const { return info_; }
  const std::vector<EventDesc>& events() const { return events_; }
  // The event a sample belongs to (by its id), or nullptr.
  const EventDesc* event_for(const SampleRecord& s) const;

  // The next data record; nullopt at the end.
  Result<std::optional<Record>> next();
  // File mode: the record at `offset` (an input_offset() taken before the next() that read
  // it), read again, without moving where next() reads. For a reader that orders a file by
  // an index of (time, offset) rather than holding the records.
  Result<Record> read_at(uint64_t offset);
  // How far the reading is, in bytes of input, and the input's size (0 for a stream): for
  // progress reports.
  uint64_t input_offset() const { return offset_; }
  uint64_t input_size() const { return src_ && src_->seekable() ? src_->size() : 0; }

 private:
  PerfDataReader() = default;
  Status start();
  Status read_file_header();
  Status read_exact(void* buf, size_t n, bool* eof);
  Status read_pipe_tracing_data(std::span<const uint8_t> payload);
  Status handle_pipe_record(const perf_event_header& h, std::span<const uint8_t> payload);
  void name_events();

  std::unique_ptr<ByteSource> src_;
  std::string what_;
  Mode mode_ = Mode::kFile;
  FileInfo info_;
  std::vector<EventDesc> events_;
  uint64_t offset_ = 0;    // of the next record, for messages and file-mode bounds
  uint64_t data_start_ = 0, data_end_ = 0;  // file mode
  Bytes record_;
};

}  // namespace offwake::perfdata
