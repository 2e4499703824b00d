// Puts the records of several ring buffers, each in its own time order, into one time order,
// the way perf's rounds do: after a pass that read every buffer, a record can be released
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

namespace offwake::sched {

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

}  // namespace offwake::sched
