// Unwind tables built beside the recording, on threads of their own: a binary that a process
// maps while the recording runs (an MMAP2 record) gets its table without holding up the
// recorder's reading, nor the tables of the binaries mapped after it. Node's 2.7 MB of
// .eh_frame take 150 ms to read; built on the recorder's thread, a python3.11 started beside it
// was walked by frame pointers for those 150 ms (half its blocked time, ending in the C
// library), where alone it waits 10 ms. The smallest binary asked for is built first.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "unwind/unwind_table.h"
#include "util/result.h"

namespace offwake::unwind {

class TableBuilder {
 public:
  struct Built {
    std::string key;  // as asked
    Result<UnwindTable> table;
    uint64_t ns = 0;  // the build's time on its thread
  };

  explicit TableBuilder(unsigned threads);
  // Stops the threads: a build under way ends first, the builds not started are dropped.
  ~TableBuilder();
  TableBuilder(const TableBuilder&) = delete;
  TableBuilder& operator=(const TableBuilder&) = delete;

  // The table of the file at `path` is built, and handed back under `key`.
  void request(const std::string& key, const std::string& path);
  // The tables built since the last call; with `wait`, at least one (there must be one asked
  // for and not yet taken).
  std::vector<Built> take_built(bool wait = false);

 private:
  struct Job {
    std::string key, path;
    uint64_t size = 0;  // of the file when asked: the smallest goes first
  };
  void work(std::stop_token stop);

  std::mutex mutex_;
  std::condition_variable_any wake_;  // a job for the threads
  std::condition_variable built_one_;  // a table for take_built()
  std::deque<Job> queue_;
  std::vector<Built> built_;
  std::vector<std::jthread> threads_;  // last: stopped and joined first
};

}  // namespace offwake::unwind
