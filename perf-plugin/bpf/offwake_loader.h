// Loads and attaches the offwake BPF programs: open, configure, load, attach, in that order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "blocks/block_filters.h"
#include "bpf/aggregates.h"
#include "bpf/event_reader.h"
#include "bpf/program_runs.h"
#include "bpf/stack_trace_map.h"
#include "offwake.h"
#include "util/result.h"

namespace offwake::bpf {

// The generated skeleton (offwake.skel.h) defines `struct offwake`, which would clash with
// namespace offwake at global scope; offwake_loader.cpp includes it inside this namespace.
namespace skel {
struct offwake;
}

// The filters (BlockFilters: tgids, tids, thread kind, states, block length) and what only the
// BPF programs do.
struct LoaderOptions : BlockFilters {
  uint32_t max_tgids = 65536;       // capacity of the tgid set, forks included (exited
                                    // processes leave it)
  std::string cgroup_path;          // --cgroup: a cgroup v2 directory; its descendants match too

  // When stacks are taken. By default a stack is taken only for a block that is kept
  // (--min-block/--max-block): user stacks of blocks inside a system call when it returns,
  // waker stacks only for blocks that can still be kept. `eager` takes every stack at once,
  // as before; the results are the same (tests compare them).
  bool eager = false;
  // User stacks by bpf_get_stackid(BPF_F_USER_STACK) instead of the programs' own
  // frame-pointer walk, which gives the same frames without the faulting read that ends
  // most of the kernel's walks.
  bool kernel_user_walker = false;
  // User stacks by the unwind tables of .eh_frame (bpf-progs/unwind_row.h) where a pc has
  // one, by frame pointer elsewhere (--user-walker=auto). The tables go into unwind_rows
  // (UnwindMaps) before a process's mappings that name them. x86-64 only.
  bool unwind_tables = false;
  uint32_t unwind_rows = 4u << 20;        // capacity of unwind_rows (8 bytes a row)
  uint32_t unwind_processes = 8192;        // processes with tables at once
  // Lazily, deferred user stacks are walked by a task work on the task's way back to user
  // space (Linux 6.18's bpf_task_work_schedule_resume), or where that kfunc is missing (or
  // with kernel_user_walker, whose helper needs a program context, or where the kernel
  // refuses it to these programs) only for blocks inside a system call, by a program on every
  // sys_exit, unless rseq_update serves (then threads without rseq are walked at switch-out).
  // This forces the sys_exit way (tests).
  bool sys_exit_user_stacks = false;
  // Lazily, a thread that registered rseq (every glibc thread) has its deferred user stack
  // walked by a program on the rseq_update tracepoint, which the kernel fires on each of its
  // returns to user space after a switch-out: no task work to schedule, which costs an
  // interrupt. False leaves them to the task work or sys_exit (tests).
  bool rseq_user_stacks = true;
  uint32_t user_work_entries = 65536;  // threads that can have a deferred user stack at once
  // Blocked kernel stacks by bpf_get_stackid() at switch-out, whole, instead of from the
  // sleeping task at switch-in, which is cheaper but leaves out the scheduler's own
  // functions (.sched.text: schedule, mutex_lock, down_read, io_schedule, ...). Always
  // eager: the stack is gone once the task runs again.
  bool sched_frames = false;
  // Every kernel stack the memo replays is unwound as well, and counted if it differs
  // (kernel_memo.bpf.h): a check of the memo, at the cost it saves.
  bool check_replays = false;
  uint64_t user_stack_limit = 8u << 20;  // a user frame lies within this much above the sp

  // Map sizes. The stack store, as large as the stack_trace map, takes the stacks the
  // programs walk or copy themselves and those whose stack_trace bucket was taken.
  uint32_t stack_map_entries = 16384;
  uint32_t stack_store_entries = 0;  // 0: as many as stack_map_entries
  uint32_t max_stack_depth = 0;     // frames per stack; 0 or more than the sysctl:
                                    // kernel.perf_event_max_stack (127 by default)
  uint32_t aggregate_entries = 16384;
  // Leading kernel frames dropped from every kernel stack: the walk starts inside the BPF
  // program, which the x86 ORC unwinder reports as junk frames (2 on Linux 6.18).
  uint32_t kernel_stack_skip = 2;

  // --chain-depth: hops of wakeup chain per block (1: the waker only, as without chains; at
  // most OFFWAKE_MAX_CHAIN_DEPTH). Each further hop is the waker's latest block before the
  // wakeup and that block's waker, with stacks taken when they happened (no walk of its own).
  uint32_t chain_depth = 1;

  // --timeline: each block becomes one struct offwake_event in a BPF ring buffer, read with
  // poll_events()/consume_events(), instead of being aggregated. The filters apply alike.
  bool timeline = false;
  // Ring buffer size in timeline mode: a power of 2, a multiple of the page size. Events
  // that do not fit are dropped and counted (ringbuf_drops). Aggregated mode uses one page.
  uint32_t ringbuf_bytes = 8u << 20;

  // --switch-output (aggregated mode): two aggregation maps, one per window, that
  // switch_window() alternates.
  bool switch_windows = false;

  // --bpf-stats: the kernel's run-time statistics on from the load until the programs are
  // gone (bpf/program_runs.h), so that programs() can tell what they cost.
  bool run_time_stats = false;
};

class OffwakeBpf {
 public:
  // Opens the skeleton, writes the options into rodata and map sizes, loads it and fills
  // the filter maps. Nothing is attached yet. A failed load's Error carries libbpf's log
  // (the verifier's verdict) whatever the verbosity. A failure that is the machine's (no BTF,
  // no permission to load BPF, a verifier refusal) is ErrorKind::kUnavailable, one that is the
  // options' (a bad value, a cgroup that does not exist) kUsage.
  static Result<OffwakeBpf> load(const LoaderOptions& options);

  OffwakeBpf(OffwakeBpf&&) noexcept;
  OffwakeBpf& operator=(OffwakeBpf&&) noexcept;
  ~OffwakeBpf();

  Status attach();
  // Stops the recording and returns its end (CLOCK_MONOTONIC): the programs record no
  // switch and no wakeup from that time on, then they are detached. Lazily, the programs
  // that give parked blocks their user stacks stay a further 20 ms first.
  uint64_t detach();

  // After detach(): blocks that started during the recording and have not ended are ended at
  // `stop_ns` (CLOCK_MONOTONIC; detach()'s stop, or an earlier time), by a BPF task iterator,
  // and aggregated (or sent) with waker OFFWAKE_WAKER_STILL_BLOCKED unless already woken;
  // counted in still_blocked.
  Status end_open_blocks(uint64_t stop_ns);

  // Adds a process to the target set, also while attached. Only with options.tgids set
  // (otherwise everything is traced already).
  Status add_target_tgid(uint32_t tgid);

  // Reads left in place; drain_aggregates(aggregates_fd()) to read and delete.
  Result<std::vector<Aggregate>> read_aggregates() const;
  Status visit_aggregates(const AggregateBatchFn& fn) const;
  Result<offwake_counters> read_counters() const;
  // Runs of the programs the kernel skipped because a BPF program was already running on
  // that CPU (bpf_prog_info.recursion_misses): switches (blocks never seen, or never seen
  // to end), wakeups never seen, and the rest (forks, exits, system call returns: a parked
  // user stack is then taken at the task's next switch-out, nothing is lost).
  struct RecursionMisses {
    uint64_t switches = 0, wakeups = 0, other = 0;
  };
  Result<RecursionMisses> recursion_misses() const;
  // Each loaded program's runs, CPU time and recursion misses since the load
  // (bpf/program_runs.h), read once; `misses` sums the last as recursion_misses() does.
  // `measured`: the kernel counted runs and time all along, its run-time statistics on since
  // attach() at least (options.run_time_stats, or kernel.bpf_stats_enabled then and now); else
  // those counts are partial or zero.
  struct Programs {
    bool measured = false;
    std::vector<ProgramRuns> programs;
    RecursionMisses misses;
  };
  Result<Programs> programs() const;
  // The stack_trace map and the stack store, holding their own fd references.
  Result<StackTraceMap> stack_trace_map() const;
  // Whether stacks are taken lazily (a duration filter without `eager`).
  bool lazy() const { return lazy_; }
  // Lazily: whether deferred user stacks are taken by task work (else at sys_exit).
  bool user_task_work() const;
  bool user_rseq() const;

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

  // --switch-output: the programs add to the other aggregation map from now on. Returns, once
  // no program is adding to the map of the window that ended, that map's fd: its elements
  // are then user space's to read and delete (drain_aggregates()). aggregates_fd() is the
  // new window's. An error without switch_windows, or if programs seem stuck on the old map.
  Result<int> switch_window();

  int aggregates_fd() const;  // the current window's
  int counters_fd() const;
  int stack_traces_fd() const;
  int stack_store_fd() const;
  int target_tgids_fd() const;
  int task_blocks_fd() const;  // task storage: key a pidfd, value struct offwake_task_block
  int cpu_current_fd() const;  // per CPU: the tid the programs last saw switched in
  int events_map_fd() const;
  int unwind_rows_fd() const;       // array of offwake_unwind_row, BPF_F_MMAPABLE
  int unwind_processes_fd() const;  // key tgid, value struct offwake_unwind_process
  int unwind_wanted_fd() const;     // key tgid: processes that asked for tables; -1 if none ask
  // Changed before each change to unwind_processes (bpf-progs/maps.bpf.h); in the programs'
  // memory, which outlives any use of it here.
  uint32_t* unwind_tables_epoch() const;
  uint32_t unwind_rows_capacity() const;  // 0 without tables
  uint32_t stack_depth() const { return stack_depth_; }
  // Whether interrupt-context wakers can be told apart on this kernel (x86: preempt_count
  // located through vmlinux BTF). Without it wakers carry OFFWAKE_WAKER_IRQ_UNKNOWN.
  bool irq_detection() const { return irq_detection_; }
  // Lazily: whether this kernel refused the task work (it has the kfunc, but not for the
  // scheduler's programs): deferred user stacks are then walked at sys_exit and rseq_update.
  bool task_work_refused() const { return task_work_refused_; }

  struct SkelDeleter {
    void operator()(skel::offwake* skel) const;
  };
  using SkelPtr = std::unique_ptr<skel::offwake, SkelDeleter>;

 private:

  OffwakeBpf(SkelPtr skel, uint32_t stack_depth, bool filter_tgids, bool irq_detection, bool lazy)
      : skel_(std::move(skel)),
        stack_depth_(stack_depth),
        filter_tgids_(filter_tgids),
        irq_detection_(irq_detection),
        lazy_(lazy) {}

  SkelPtr skel_;
  std::unique_ptr<EventReader> events_;  // timeline mode; after skel_: freed before its map
  uint32_t stack_depth_;
  bool filter_tgids_;
  bool irq_detection_;
  bool lazy_;
  bool task_work_refused_ = false;
  UniqueFd run_time_stats_;          // options.run_time_stats: held while the programs are
  bool stats_on_at_attach_ = false;  // the kernel counted run time when attach() began
};

// Whether this kernel can run a BPF callback on a task's way back to user space
// (bpf_task_work_schedule_resume, Linux 6.18).
bool kernel_has_task_work();

// Whether this kernel has the rseq_update tracepoint for a tp_btf program.
bool kernel_has_rseq_update();

// kernel.perf_event_max_stack, the deepest stack bpf_get_stackid() can return.
Result<uint32_t> perf_event_max_stack();

// Checks what the programs need from this kernel (BTF, tp_btf sched_switch with prev_state),
// with an Error that says what is missing.
Status probe_kernel_support();

}  // namespace offwake::bpf
