// Several sets of BPF programs, loaded with different options, recording the same run of a
// workload at once: they see the same blocks, so what they record can be compared.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "bpf/offwake_loader.h"
#include "workload.h"
#include "support/paths.h"

namespace offwake::bpf {

struct Capture {
  std::vector<Aggregate> aggregates;
  offwake_counters counters{};
  std::optional<StackTraceMap> stacks;
  bool task_work = false;  // deferred user stacks were taken by task work
  bool rseq = false;       // ... or, for threads with rseq, at rseq_update
  bool task_work_refused = false;  // the kernel has task work, but refused it to our programs
  uint64_t min_block_ns = 0;       // its --min-block
};

// Runs `workload` once under each of `options` (all attached at once, following the
// workload's children); `text` gets its standard output. The workload must exit 0.
inline void run_captures(const std::string& workload, const std::vector<std::string>& args,
                         std::vector<LoaderOptions> options, std::vector<Capture>* out, std::string* text) {
  HeldProcess proc(kWorkloads + workload, args);
  ASSERT_GT(proc.pid(), 0);
  std::vector<OffwakeBpf> loaded;
  for (LoaderOptions& o : options) {
    o.tgids = {static_cast<uint32_t>(proc.pid())};
    o.follow_forks = true;
    auto bpf = OffwakeBpf::load(o);
    ASSERT_TRUE(bpf.ok()) << bpf.error().message();
    loaded.push_back(std::move(bpf).value());
  }
  for (OffwakeBpf& b : loaded) ASSERT_TRUE(b.attach().ok());
  proc.release();
  int status = -1;
  *text = proc.finish(&status);
  for (OffwakeBpf& b : loaded) b.detach();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << *text;
  for (size_t i = 0; i < loaded.size(); ++i) {
    OffwakeBpf& b = loaded[i];
    Capture c;
    c.min_block_ns = options[i].min_block_ns;
    auto aggs = b.read_aggregates();
    ASSERT_TRUE(aggs.ok()) << aggs.error().message();
    c.aggregates = std::move(aggs).value();
    auto counters = b.read_counters();
    ASSERT_TRUE(counters.ok());
    c.counters = *counters;
    auto stacks = b.stack_trace_map();
    ASSERT_TRUE(stacks.ok());
    c.stacks.emplace(std::move(stacks).value());
    c.task_work = b.user_task_work();
    c.rseq = b.user_rseq();
    c.task_work_refused = b.task_work_refused();
    out->push_back(std::move(c));
  }
}

}  // namespace offwake::bpf
