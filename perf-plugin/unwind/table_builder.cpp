#include "unwind/table_builder.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "util/clock.h"

namespace offwake::unwind {

TableBuilder::TableBuilder(unsigned threads) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    threads_.emplace_back([this](std::stop_token stop) { work(stop); });
}

TableBuilder::~TableBuilder() {
  for (auto& t : threads_) t.request_stop();
  wake_.notify_all();
  threads_.clear();  // joins
}

void TableBuilder::request(const std::string& key, const std::string& path) {
  struct stat st {};
  const uint64_t size = stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({key, path, size});
  }
  wake_.notify_one();
}

std::vector<TableBuilder::Built> TableBuilder::take_built(bool wait) {
  std::unique_lock lock(mutex_);
  if (wait) built_one_.wait(lock, [this] { return !built_.empty(); });
  return std::exchange(built_, {});
}

void TableBuilder::work(std::stop_token stop) {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, stop, [this] { return !queue_.empty(); });
      if (stop.stop_requested()) return;
      auto smallest = std::min_element(queue_.begin(), queue_.end(),
                                       [](const Job& a, const Job& b) { return a.size < b.size; });
      job = std::move(*smallest);
      queue_.erase(smallest);
    }
    const uint64_t t0 = steady_ns();
    Built b{job.key, build_unwind_table(job.path), 0};
    b.ns = steady_ns() - t0;
    {
      std::lock_guard lock(mutex_);
      built_.push_back(std::move(b));
    }
    built_one_.notify_all();
  }
}

}  // namespace offwake::unwind
