// The latest threads' exit times, from the tracking events' PERF_RECORD_EXIT, for the stamps
// of the samples of a waker on its way out (BlockWriter::ExitTimeFn).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>

namespace offwake {

// Bounded, the oldest forgotten first, so that a long recording's memory stays flat however
// many threads come and go.
class ExitTimes {
 public:
  void exited(uint32_t tid, uint64_t time) {
    if (order_.size() >= kKept) {
      auto it = times_.find(order_.front().first);
      if (it != times_.end() && it->second == order_.front().second) times_.erase(it);
      order_.pop_front();
    }
    times_[tid] = time;
    order_.emplace_back(tid, time);
  }
  std::optional<uint64_t> of(uint32_t tid) const {
    auto it = times_.find(tid);
    return it == times_.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  }

 private:
  static constexpr size_t kKept = 65536;
  std::unordered_map<uint32_t, uint64_t> times_;
  std::deque<std::pair<uint32_t, uint64_t>> order_;
};

}  // namespace offwake
