// The time order of the live tracepoint back end's ring buffers, pass by pass: perf's rounds
// (perfdata::TimeOrder) with one pass of margin for the buffers that gave nothing.
//
// After a pass over every buffer, TimeOrder may release every record up to the oldest of: the
// latest time each buffer that had data gave (a CPU's buffer is in time order), and, for a
// buffer that gave nothing, a time it cannot still deliver anything older than. The pass's own
// start is not such a time: the kernel stamps a record, then walks both of its stacks, then
// commits it, so a record stamped just before the pass began can be committed just after its
// buffer was found empty (a vCPU preempted by the host in between commits it milliseconds
// later). Released after younger records, it would break the pairing: a switch-in before its
// switch-out is a block without its waker that ends late. So an empty buffer holds the release
// back to the start of the previous pass, as perf's FINISHED_ROUND holds a round back to the
// one before: a record would have to take a whole pass to commit to come out of order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "perfdata/time_order_queue.h"

namespace offwake::sched {

template <typename T>
class PassOrder {
 public:
  explicit PassOrder(size_t buffers) : order_(buffers) {}

  // A pass over the buffers starts at `now` (the records' clock).
  void begin_pass(uint64_t now) {
    previous_start_ = start_;
    start_ = now;
  }
  // A record read from `buffer` in this pass.
  void push(size_t buffer, uint64_t time, T item) { order_.push(buffer, time, std::move(item)); }
  // A record from elsewhere (the tracking events, read after the pass): ordered, holds nothing back.
  void push_other(uint64_t time, T item) { order_.push_other(time, std::move(item)); }

  // The pass has read every buffer: fn(time, item) for each record safe to release, oldest first.
  template <typename Fn>
  size_t end_pass(Fn&& fn) {
    return order_.end_pass(previous_start_, fn);
  }
  // The end: everything left.
  template <typename Fn>
  size_t flush(Fn&& fn) {
    return order_.flush(fn);
  }

  size_t pending() const { return order_.pending(); }
  // Records that still came older than one released (they are released out of order).
  uint64_t late() const { return order_.late(); }

 private:
  perfdata::TimeOrder<T> order_;
  uint64_t start_ = 0, previous_start_ = 0;
};

}  // namespace offwake::sched
