// PerfDataWriter: the events and records of one recording, as a perf.data file or stream.
//
// File mode lays out  [header][ids][attrs][data ...][feature table][feature sections]
// and writes the header last, into a temporary file renamed over the target on close(): an
// interrupted recording never leaves a file that looks complete.
// Pipe mode streams   [pipe header][HEADER_ATTR...][HEADER_FEATURE...][data ...]
// with no seek, for `-o -`.
#pragma once

#include <functional>
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
  uint64_t rounds = 0;          // end_round() FINISHED_ROUND records kept by close()
  uint64_t rounds_dropped = 0;  // ... and overwritten, because a later record was too old for them
};

class PerfDataWriter {
 public:
  // Writes to `path` via `path`.tmp.PID (mode 0600), renamed over `path` by close().
  static Result<PerfDataWriter> create_file(const std::string& path, std::vector<EventDesc> events,
                                            HostInfo host);
  // Streams to an open descriptor (stdout for `-o -`, a FIFO), named `name` in errors; the
  // writer takes ownership.
  static Result<PerfDataWriter> create_pipe(UniqueFd fd, std::vector<EventDesc> events, HostInfo host,
                                            const std::string& name = "standard output");
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
  Status write(const CgroupRecord& r);
  Status write(const NamespacesRecord& r);
  Status write(const Record& r);
  Status finished_round();  // written as asked (tests, copies of another file's records)
  Status finished_init();
  // The end of a pass over every source (perf record writes a FINISHED_ROUND after each pass
  // over its ring buffers), so that readers can put the records in time order a round at a
  // time instead of sorting the whole file. perf's readers hand on, at each FINISHED_ROUND,
  // the records not newer than the newest one before the previous FINISHED_ROUND; a round is
  // right only if no record after it is older than that. A writer's caller cannot promise it
  // (a --timeline block is written when it ends, stamped with its wakeup or its start), so
  // the writer checks it: in file mode close() keeps the rounds that every later record kept
  // to, and overwrites the others with FINISHED_INIT (the same 8 bytes, no payload, which
  // readers pass over). A stream cannot be rewritten: in pipe mode this writes nothing.
  Status end_round();

  // A binary the samples refer to, e.g. the kernel's build id for "[kernel.kallsyms]": in the
  // HEADER_BUILD_ID section of a file, in HEADER_BUILD_ID records at the end of a stream.
  void add_build_id(const BuildIdEntry& entry);

  // An extra feature section, written by close() in file mode (perf warns about features it
  // does not know in pipe mode, so they are not streamed).
  void add_feature(int bit, Bytes section) { extra_features_[bit] = std::move(section); }

  // What to do with a file already at the final path, called with that path just before the
  // complete new file is renamed to it (perf record's rule: move it aside as <path>.old). At
  // that moment, not before: a recording that fails leaves the existing file as it was.
  using BeforeCommit = std::function<Status(const std::string& path)>;
  // File mode: feature sections, header, rename. Pipe mode: flush.
  Status close(const BeforeCommit& before_commit = {});
  // File mode: close(), renaming to `path` rather than the name given at creation (perf
  // record --switch-output names a file by the time it ends). Pipe mode: close().
  Status close_as(const std::string& path, const BeforeCommit& before_commit = {});
  // Bytes written so far.
  uint64_t position() const { return sink_->position(); }

  const WriterStats& stats() const { return stats_; }
  Mode mode() const { return mode_; }
  const std::vector<EventDesc>& events() const { return events_; }
  // The sink, for tests that write to memory.
  const ByteSink& sink() const { return *sink_; }

 private:
  PerfDataWriter() = default;
  Status begin();
  Status emit(Result<Bytes> record);
  void timed(uint64_t time);  // a record of this time was written
  // A non-sample record, timed by its sample_id (readers order it by that; 0 without sample_id_all).
  Status emit_timed(Result<Bytes> record, const SampleId& id);
  Status settle_rounds();     // close(): overwrite the end_round() rounds that do not hold
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
  // end_round()'s FINISHED_ROUND records, in file order: where each is, the newest record
  // before it, and the oldest record between it and the next one.
  struct Round {
    uint64_t offset, newest_before, oldest_after;
  };
  std::vector<Round> rounds_;
  uint64_t newest_ = 0;           // of every timed record so far
  bool written_since_round_ = false;
  std::string final_path_;  // file mode only
  PendingFile temp_;
  bool closed_ = false;
  WriterStats stats_;
};

}  // namespace offwake::perfdata
