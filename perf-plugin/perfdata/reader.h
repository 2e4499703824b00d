// PerfDataReader: reads what PerfDataWriter (or perf record) writes, file or pipe format.
// Truncated or corrupt input yields an Error naming the offset, never a crash; but a stream
// that ends inside a record after some records is read up to its last whole record, as perf
// reads it, and cut_short() says where it ended.
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
  // The input as messages name it: its path, "standard input" or "memory". Every error of the
  // reader starts with it.
  const std::string& name() const { return what_; }
  // Feature sections. In pipe mode they arrive as records: those before the first data record
  // (the event descriptions among them) are read when the reader opens, the rest while reading;
  // the build ids of its MMAP2 records are added as they come, as a file has them in its
  // HEADER_BUILD_ID section.
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
  // A stream that ended inside a record: next() ended at the record before, and this is a
  // one-line warning that says where the data was cut. Empty for a stream that ended on a
  // record boundary, or while it has not ended. (A file's header says how long its data is:
  // a file cut short is an error, as perf has it.)
  std::optional<std::string> cut_short() const;

 private:
  PerfDataReader() = default;
  Status start();
  Status read_file_header();
  // Reads n bytes from the stream, fewer only at its end; returns how many.
  Result<size_t> read_stream(void* buf, size_t n);
  // The end of a stream inside the record at `at`, after `got` of its bytes: the end of the
  // records, or an error before any was read (nothing to show).
  Result<std::optional<Record>> stream_cut(uint64_t at, uint64_t got);
  Result<bool> read_pipe_tracing_data(std::span<const uint8_t> payload);
  Status handle_pipe_record(const perf_event_header& h, std::span<const uint8_t> payload);
  void note_in_stream(const Record& r);
  void name_events();

  std::unique_ptr<ByteSource> src_;
  std::string what_;
  Mode mode_ = Mode::kFile;
  FileInfo info_;
  std::vector<EventDesc> events_;
  uint64_t offset_ = 0;    // of the next record, for messages and file-mode bounds
  uint64_t data_start_ = 0, data_end_ = 0;  // file mode
  uint64_t records_read_ = 0;               // data records next() returned
  std::optional<std::pair<uint64_t, uint64_t>> cut_;  // stream: (record's offset, end of the data)
  // Stream: the first data record, read when opening, for next() to return first.
  std::optional<Record> first_;
  bool have_first_ = false;
  Bytes record_;
};

}  // namespace offwake::perfdata
