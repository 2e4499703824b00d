// Loads and attaches the offwake BPF programs: open, configure, load, attach, in that order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpf/aggregates.h"
#include "bpf/event_reader.h"
#include "bpf/stack_trace_map.h"
#include "offwake.h"
#include "util/result.h"

namespace offwake::bpf {

// The generated skeleton (offwake.skel.h) defines `struct offwake`, which would clash with
// namespace offwake at global scope; offwake_loader.cpp includes it inside this namespace.
namespace skel {
struct offwake;
}

struct LoaderOptions {
  // Filters on the blocked thread (wakers are never filtered).
  std::vector<uint32_t> tgids;      // -p: only these processes; empty: all
  bool follow_forks = false;        // children of `tgids` become targets (a followed command)
  uint32_t max_tgids = 1024;        // capacity of the tgid set, forks included
  uint32_t tid = 0;                 // -t: only this thread; 0: all
  bool user_threads_only = false;   // -u
  bool kernel_threads_only = false; // --kernel-threads-only
  uint32_t state_mask = OFFWAKE_STATE_INTERRUPTIBLE | OFFWAKE_STATE_UNINTERRUPTIBLE;  // --state
  uint64_t min_block_ns = 0;        // --min-block
  uint64_t max_block_ns = 0;        // --max-block; 0: no limit
  std::string cgroup_path;          // --cgroup: a cgroup v2 directory; its descendants match too

  // Map sizes.
  uint32_t stack_map_entries = 16384;
  uint32_t max_stack_depth = 0;     // frames per stack; 0 or more than the sysctl:
                                    // kernel.perf_event_max_stack (127 by default)
  uint32_t aggregate_entries = 16384;
  // Leading kernel frames dropped from every kernel stack: the walk starts inside the BPF
  // program, which the x86 ORC unwinder reports as junk frames (2 on Linux 6.18).
  uint32_t kernel_stack_skip = 2;

  // --timeline: each block becomes one struct offwake_event in a BPF ring buffer, read with
  // poll_events()/consume_events(), instead of being aggregated. The filters apply alike.
  bool timeline = false;
  // Ring buffer size in timeline mode: a power of 2, a multiple of the page size. Events
  // that do not fit are dropped and counted (ringbuf_drops). Aggregated mode uses one page.
  uint32_t ringbuf_bytes = 8u << 20;
};

class OffwakeBpf {
 public:
  // Opens the skeleton, writes the options into rodata and map sizes, loads it and fills
  // the filter maps. Nothing is attached yet. A failed load's Error carries libbpf's log
  // (the verifier's verdict) whatever the verbosity.
  static Result<OffwakeBpf> load(const LoaderOptions& options);

  OffwakeBpf(OffwakeBpf&&) noexcept;
  OffwakeBpf& operator=(OffwakeBpf&&) noexcept;
  ~OffwakeBpf();

  Status attach();
  void detach();

  // After detach(): blocks that started during the recording and have not ended are ended at
  // `stop_ns` (CLOCK_MONOTONIC), by a BPF task iterator, and aggregated (or sent) with waker
  // OFFWAKE_WAKER_STILL_BLOCKED unless already woken; counted in still_blocked.
  Status end_open_blocks(uint64_t stop_ns);

  // Adds a process to the target set, also while attached. Only with options.tgids set
  // (otherwise everything is traced already).
  Status add_target_tgid(uint32_t tgid);

  // Reads left in place; drain_aggregates(aggregates_fd()) to read and delete.
  Result<std::vector<Aggregate>> read_aggregates() const;
  Result<offwake_counters> read_counters() const;
  // Runs of the programs the kernel skipped because a BPF program was already running on
  // that CPU (bpf_prog_info.recursion_misses, summed): blocks or wakeups never seen.
  Result<uint64_t> recursion_misses() const;
  // The stack map, holding its own fd reference.
  Result<StackTraceMap> stack_trace_map() const;

  // Timeline mode: reads the events waiting in the ring buffer, after waiting up to
  // timeout_ms for some (0: no wait, for a recorder that polls its perf fds itself and
  // calls this every round). Returns how many `cb` was given. An error from `cb` stops the
  // reading and is returned. Events come in ring-buffer order: see struct offwake_event.
  // An error outside timeline mode.
  Result<size_t> poll_events(int timeout_ms, const EventCallback& cb);
  // Reads everything left, without waiting: after detach(), at the end of a recording.
  Result<size_t> consume_events(const EventCallback& cb);
  // An epoll fd that is readable when events wait (timeline mode; -1 otherwise).
  int events_fd() const;
  bool timeline() const { return events_ != nullptr; }

  int aggregates_fd() const;
  int counters_fd() const;
  int stack_traces_fd() const;
  int target_tgids_fd() const;
  int events_map_fd() const;
  uint32_t stack_depth() const { return stack_depth_; }
  // Whether interrupt-context wakers can be told apart on this kernel (x86: preempt_count
  // located through vmlinux BTF). Without it wakers carry OFFWAKE_WAKER_IRQ_UNKNOWN.
  bool irq_detection() const { return irq_detection_; }

 private:
  struct SkelDeleter {
    void operator()(skel::offwake* skel) const;
  };
  using SkelPtr = std::unique_ptr<skel::offwake, SkelDeleter>;

  OffwakeBpf(SkelPtr skel, uint32_t stack_depth, bool filter_tgids, bool irq_detection)
      : skel_(std::move(skel)),
        stack_depth_(stack_depth),
        filter_tgids_(filter_tgids),
        irq_detection_(irq_detection) {}

  SkelPtr skel_;
  std::unique_ptr<EventReader> events_;  // timeline mode; after skel_: freed before its map
  uint32_t stack_depth_;
  bool filter_tgids_;
  bool irq_detection_;
};

// kernel.perf_event_max_stack, the deepest stack bpf_get_stackid() can return.
Result<uint32_t> perf_event_max_stack();

// Checks what the programs need from this kernel (BTF, tp_btf sched_switch with prev_state),
// with an Error that says what is missing.
Status probe_kernel_support();

}  // namespace offwake::bpf
