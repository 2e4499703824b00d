// PerfDataWriter: the events and records of one recording, as a perf.data file or stream.
//
// File mode lays out  [header][ids][attrs][data ...][feature table][feature sections]
// and writes the header last, into a temporary file renamed over the target on close(): an
// interrupted recording never leaves a file that looks complete.
// Pipe mode streams   [pipe header][HEADER_ATTR...][HEADER_FEATURE...][data ...]
// with no seek, for `-o -`.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "perfdata/features.h"
#include "perfdata/records.h"
#include "perfdata/sink.h"

namespace offwake::perfdata {

enum class Mode { kFile, kPipe };

// A file that is removed unless committed: the temporary output of file mode.
class PendingFile {
 public:
  PendingFile() = default;
  explicit PendingFile(std::string path) : path_(std::move(path)) {}
  PendingFile(PendingFile&& o) noexcept : path_(std::exchange(o.path_, {})) {}
  PendingFile& operator=(PendingFile&& o) noexcept;
  ~PendingFile();
  const std::string& path() const { return path_; }
  bool empty() const { return path_.empty(); }
  // Renames it to `target`; it is no longer removed.
  Status commit(const std::string& target);

 private:
  std::string path_;
};

struct WriterStats {
  uint64_t records = 0;
  uint64_t samples = 0;
  uint64_t bytes = 0;  // total bytes of the output when closed
};

class PerfDataWriter {
 public:
  // Writes to `path` via `path`.tmp.PID (mode 0600), renamed over `path` by close().
  static Result<PerfDataWriter> create_file(const std::string& path, std::vector<EventDesc> events,
                                            HostInfo host);
  // Streams to an open descriptor (stdout for `-o -`); the writer takes ownership.
  static Result<PerfDataWriter> create_pipe(UniqueFd fd, std::vector<EventDesc> events, HostInfo host);
  // Any sink; Mode::kFile needs a seekable one.
  static Result<PerfDataWriter> create(std::unique_ptr<ByteSink> sink, Mode mode,
                                       std::vector<EventDesc> events, HostInfo host);

  PerfDataWriter(PerfDataWriter&&) noexcept;
  PerfDataWriter& operator=(PerfDataWriter&&) noexcept;
  ~PerfDataWriter();  // without close(): the temporary file is removed (PendingFile)

  Status write(const SampleRecord& r);
  Status write(const CommRecord& r);
  Status write(const Mmap2Record& r);  // build ids of MMAP2 records go into HEADER_BUILD_ID too
  Status write(const TaskRecord& r);
  Status write(const LostRecord& r);
  Status write(const LostSamplesRecord& r);
  Status write(const Record& r);
  Status finished_round();
  Status finished_init();

  // A binary the samples refer to, e.g. the kernel's build id for "[kernel.kallsyms]".
  void add_build_id(const BuildIdEntry& entry);

  // An extra feature section, written by close() in file mode (perf warns about features it
  // does not know in pipe mode, so they are not streamed).
  void add_feature(int bit, Bytes section) { extra_features_[bit] = std::move(section); }

  // File mode: feature sections, header, rename. Pipe mode: flush.
  Status close();

  const WriterStats& stats() const { return stats_; }
  Mode mode() const { return mode_; }
  const std::vector<EventDesc>& events() const { return events_; }
  // The sink, for tests that write to memory.
  const ByteSink& sink() const { return *sink_; }

 private:
  PerfDataWriter() = default;
  Status begin();
  Status emit(Result<Bytes> record);
  Result<const perf_event_attr*> attr_for(uint64_t id) const;

  std::unique_ptr<ByteSink> sink_;
  Mode mode_ = Mode::kFile;
  std::vector<EventDesc> events_;
  std::map<uint64_t, size_t> event_by_id_;
  HostInfo host_;
  FeatureSections extra_features_;
  std::vector<BuildIdEntry> build_ids_;
  std::set<std::pair<std::string, std::string>> build_id_seen_;  // (filename, hex)
  uint64_t data_offset_ = 0;
  uint64_t first_time_ = UINT64_MAX, last_time_ = 0;
  std::string final_path_;  // file mode only
  PendingFile temp_;
  bool closed_ = false;
  WriterStats stats_;
};

}  // namespace offwake::perfdata
