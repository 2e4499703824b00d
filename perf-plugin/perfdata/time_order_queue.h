// Puts records into one time order, the way perf's rounds do. Two users: the live tracepoint
// back end merges ring buffers (end_pass), perf offwake convert reads a file's rounds
// (release_upto at each FINISHED_ROUND). For ring buffers, each in its own time order: after a pass that read every buffer, a record can be released
// once no buffer can still deliver an older one. A buffer that had data in the pass delivers
// nothing older than the latest time it gave; a buffer that was empty delivers nothing older
// than the start of the pass (records are committed within microseconds of their timestamp).
// So the pass releases every record up to the oldest of those times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <queue>
#include <vector>

namespace offwake::perfdata {

template <typename T>
class TimeOrder {
 public:
  explicit TimeOrder(size_t buffers) : latest_(buffers, kNone) {}

  // A record read from `buffer` in this pass.
  void push(size_t buffer, uint64_t time, T item) {
    if (buffer < latest_.size() && (latest_[buffer] == kNone || time > latest_[buffer])) latest_[buffer] = time;
    add(time, std::move(item));
  }
  // A record from elsewhere (another source read after this pass's buffers), ordered with
  // the rest but not holding anything back.
  void push_other(uint64_t time, T item) { add(time, std::move(item)); }

  // The pass that started at `pass_start` (the clock of the records) has read every buffer:
  // hands the records that are safe to release to fn(time, item), oldest first, and returns
  // how many.
  template <typename Fn>
  size_t end_pass(uint64_t pass_start, Fn&& fn) {
    uint64_t upto = pass_start;
    for (uint64_t& l : latest_) {
      if (l != kNone && l < upto) upto = l;
      l = kNone;
    }
    return release(upto, fn);
  }

  // Every record up to `limit`, oldest first (a file's round: perf hands on, at each
  // FINISHED_ROUND, what is not newer than the previous round's newest record).
  template <typename Fn>
  size_t release_upto(uint64_t limit, Fn&& fn) {
    return release(limit, fn);
  }

  // The end: everything left, oldest first.
  template <typename Fn>
  size_t flush(Fn&& fn) {
    for (uint64_t& l : latest_) l = kNone;
    return release(std::numeric_limits<uint64_t>::max(), fn);
  }

  size_t pending() const { return heap_.size(); }
  // Records that came older than a record already released (the assumption above failed):
  // they are released at the next pass, out of order, and counted here.
  uint64_t late() const { return late_; }

 private:
  static constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
  struct Entry {
    uint64_t time;
    uint64_t seq;  // arrival order: ties keep it (a buffer's own order)
    T item;
    bool operator>(const Entry& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };

  void add(uint64_t time, T item) {
    if (released_any_ && time < released_) ++late_;
    heap_.push(Entry{time, seq_++, std::move(item)});
  }

  template <typename Fn>
  size_t release(uint64_t upto, Fn& fn) {
    size_t n = 0;
    while (!heap_.empty() && heap_.top().time <= upto) {
      // priority_queue::top() is const: move out through a cast, then pop (the entry is not
      // compared again before pop removes it).
      Entry e = std::move(const_cast<Entry&>(heap_.top()));
      heap_.pop();
      if (!released_any_ || e.time > released_) released_ = e.time;
      released_any_ = true;
      fn(e.time, std::move(e.item));
      ++n;
    }
    return n;
  }

  std::vector<uint64_t> latest_;  // per buffer: latest time of this pass, kNone if no data
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  uint64_t seq_ = 0, released_ = 0, late_ = 0;
  bool released_any_ = false;
};

// perf's rule for a file's records: at each FINISHED_ROUND, the records not newer than the
// previous round's newest are handed on, in time order (a CPU's buffer written late may still
// hold older ones); the rest waits. Records older than what was handed on are counted late().
template <typename T>
class FileRounds {
 public:
  void add(uint64_t time, T item) {
    if (time > newest_) newest_ = time;
    queue_.push_other(time, std::move(item));
  }
  // FINISHED_ROUND: fn(time, item) for each record handed on.
  template <typename Fn>
  size_t round(Fn&& fn) {
    const size_t n = queue_.release_upto(previous_newest_, fn);
    previous_newest_ = newest_;
    return n;
  }
  // The end: everything left.
  template <typename Fn>
  size_t rest(Fn&& fn) {
    return queue_.flush(fn);
  }
  uint64_t late() const { return queue_.late(); }
  size_t waiting() const { return queue_.pending(); }

 private:
  TimeOrder<T> queue_{0};
  uint64_t newest_ = 0, previous_newest_ = 0;
};

}  // namespace offwake::perfdata
