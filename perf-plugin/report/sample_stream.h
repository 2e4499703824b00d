// The samples of a recording in the order perf script gives them: records sorted by time
// within each round (between FINISHED_ROUND records; all of them when there are none), the
// symbolizer fed every non-sample record before the samples after it, and each offwake-time
// sample paired with the offwake-waker sample that immediately follows it. perf offwake script
// and perf offwake report read recordings through this.
#pragma once

#include <cstdint>
#include <functional>

#include "perfdata/reader.h"
#include "symbolize/symbolizer.h"
#include "util/result.h"

namespace offwake::report {

class SampleVisitor {
 public:
  virtual ~SampleVisitor() = default;
  // An offwake-time sample, and the offwake-waker sample right after it (null if none).
  virtual Status offwake(const perfdata::EventDesc& event, const perfdata::SampleRecord& blocked,
                         const perfdata::SampleRecord* waker) = 0;
  // A non-sample record (COMM, MMAP2, FORK, EXIT, ...), after the symbolizer has seen it.
  virtual void observed(const perfdata::Record&) {}
  // Every other sample, in order: on-CPU samples, and offwake-waker samples (right after the
  // offwake() call of the offwake-time sample they belong to, if any).
  virtual Status sample(const perfdata::EventDesc& event, const perfdata::SampleRecord& s) = 0;
};

class SampleStream {
 public:
  SampleStream(perfdata::PerfDataReader& reader, symbolize::Symbolizer& symbolizer)
      : reader_(reader), symbolizer_(symbolizer) {}

  // Reads to the end. `progress`, if set, is called with the records read so far every
  // 65536 records.
  Status run(SampleVisitor& visitor, const std::function<void(uint64_t records)>& progress = {});

 private:
  Status flush(std::vector<perfdata::Record>& round, SampleVisitor& visitor);
  Status handle(const perfdata::Record& r, SampleVisitor& visitor);
  Status dispatch_pending(const perfdata::SampleRecord* waker, SampleVisitor& visitor);

  perfdata::PerfDataReader& reader_;
  symbolize::Symbolizer& symbolizer_;
  std::optional<perfdata::SampleRecord> pending_;
  const perfdata::EventDesc* pending_event_ = nullptr;
};

}  // namespace offwake::report
