// The samples of a recording in the order perf script gives them: records in time order by
// perf's rule for FINISHED_ROUND records (at each one, the records not newer than the previous
// round's newest are handed on, the rest wait; at the end, everything left; a recording
// without rounds is thus sorted whole), the symbolizer fed every non-sample record before the
// samples after it, and each offwake-time
// sample grouped with the samples that immediately follow it: its offwake-waker sample (hop
// 1) and, for a wakeup chain (perf offwake record --chain-depth), an offwake-hop-blocked and
// an offwake-hop-waker sample per further hop, as many as its raw data says. perf offwake
// script and perf offwake report read recordings through this.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "perfdata/reader.h"
#include "symbolize/symbolizer.h"
#include "util/result.h"

namespace offwake::report {

// Hop k >= 2 of a wakeup chain: the previous hop's waker blocked (its latest block before
// that wakeup), and who woke that block.
struct OffwakeHop {
  const perfdata::SampleRecord* blocked = nullptr;  // offwake-hop-blocked, never null
  const perfdata::SampleRecord* waker = nullptr;    // offwake-hop-waker; null: the group was cut short
};

// What follows an offwake-time sample. The pointers stay valid during the offwake() call.
struct OffwakeGroup {
  const perfdata::SampleRecord* waker = nullptr;  // hop 1, offwake-waker; null if none followed
  std::vector<OffwakeHop> hops;                    // hops 2, 3, ... that followed, in order
  uint32_t expected_hops = 0;  // further hops the offwake-time sample's raw data announces
  uint32_t chain_end = 0;      // OFFWAKE_CHAIN_END_* of the raw data (0: no chain recorded)
  bool chain_events = false;   // the recording has the hop events (--chain-depth > 1)
  // Fewer hop samples followed than the raw data announces (a truncated recording).
  bool cut_short() const {
    return (expected_hops && !waker) || hops.size() < expected_hops || (!hops.empty() && !hops.back().waker);
  }
};

class SampleVisitor {
 public:
  virtual ~SampleVisitor() = default;
  // An offwake-time sample, and the samples of its waker and its chain that followed it.
  virtual Status offwake(const perfdata::EventDesc& event, const perfdata::SampleRecord& blocked,
                         const OffwakeGroup& group) = 0;
  // A non-sample record (COMM, MMAP2, FORK, EXIT, ...), after the symbolizer has seen it.
  virtual void observed(const perfdata::Record&) {}
  // Every other sample, in order: on-CPU samples, and offwake-waker and offwake-hop-* samples
  // (those of a group right after the offwake() call of the offwake-time sample they belong
  // to; hop samples that belong to none, too).
  virtual Status sample(const perfdata::EventDesc& event, const perfdata::SampleRecord& s) = 0;
};

class SampleStream {
 public:
  SampleStream(perfdata::PerfDataReader& reader, symbolize::Symbolizer& symbolizer)
      : reader_(reader), symbolizer_(symbolizer) {}

  // Reads to the end. Its errors name the input, as the reader's do. `progress`, if set, is called with the records read so far every
  // 65536 records.
  Status run(SampleVisitor& visitor, const std::function<void(uint64_t records)>& progress = {});

  struct Stats {
    uint64_t groups_cut_short = 0;   // offwake-time samples with fewer hop samples than announced
    uint64_t stray_hop_samples = 0;  // offwake-hop-* samples that follow no offwake-time sample
    uint64_t rounds = 0;             // FINISHED_ROUND records
    // Records older than one already handed on (a round that did not hold what it promised):
    // handed on at the next round, out of time order. perf counts them as "out of order events".
    uint64_t out_of_order = 0;
    uint64_t most_waiting = 0;  // the most records held at once, waiting for their round
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Follower {
    const perfdata::EventDesc* event = nullptr;
    perfdata::SampleRecord sample;
  };
  struct Pending {
    const perfdata::EventDesc* event = nullptr;
    perfdata::SampleRecord blocked;
    uint32_t expected_hops = 0, chain_end = 0;
    std::vector<Follower> followers;  // the waker, then hop-blocked, hop-waker, ...
  };

  // Reads every record, holds each as keep(record, offset) gives it until its round hands it
  // on, then takes it back with take(held) and handles it. A file holds offsets and reads the
  // records again (a few bytes a record, however large the file and its rounds); a stream
  // holds the records.
  template <typename Held, typename Keep, typename Take>
  Status order(SampleVisitor& visitor, const std::function<void(uint64_t)>& progress, Keep keep, Take take);
  Status handle(const perfdata::Record& r, SampleVisitor& visitor);
  bool follows(const perfdata::EventDesc& e) const;  // the next sample of the pending group?
  // Hands on the pending group, with `last` (of `last_event`) after the samples kept, if set.
  Status dispatch_pending(SampleVisitor& visitor, const perfdata::EventDesc* last_event = nullptr,
                          const perfdata::SampleRecord* last = nullptr);

  perfdata::PerfDataReader& reader_;
  symbolize::Symbolizer& symbolizer_;
  std::optional<Pending> pending_;
  Stats stats_;
};

}  // namespace offwake::report
