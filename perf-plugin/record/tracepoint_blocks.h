// The tracepoint back end of perf offwake record (--backend tracepoint, and the fallback when
// the BPF programs cannot be loaded): sched:sched_switch and sched:sched_waking through
// libperf, decoded with libtraceevent, merged into time order and paired in user space by
// BlockPairer. Costs far more than BPF: every switch and wakeup of the machine is copied to
// user space with its two callchains.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "record/block_source.h"
#include "sched/block_pairer.h"
#include "tracking/sched_tracepoints.h"
#include "synth/kernel_maps.h"

namespace offwake {

struct TracepointBlockOptions {
  // The filters, and the timeline; is_kernel_thread (from /proc) and drop_leading_kernel
  // (from kallsyms) are filled in.
  sched::PairerOptions pairer;
  // Keep the scheduler's own frames in blocked stacks (--sched-frames).
  bool sched_frames = false;
  sched::SchedTracepointOptions tracepoints;
  std::string tracefs = "/sys/kernel/tracing";
};

Result<std::unique_ptr<BlockSource>> open_tracepoint_blocks(TracepointBlockOptions options);

// Which leading kernel frames of a blocked stack go (PairerOptions::drop_leading_kernel): the
// tracing machinery that reached the tracepoint and, unless `sched_frames`, the scheduler's
// own functions (.sched.text, between __sched_text_start and __sched_text_end).
std::function<bool(uint64_t ip)> leading_frames_to_drop(std::shared_ptr<const Kallsyms> kallsyms, bool sched_frames);
// What the pairer takes from the kernel's symbols, for the live back end and convert alike:
// the leading frames that go (leading_frames_to_drop) and the interrupts' entry stubs
// (is_interrupt_entry_stub: PairerOptions::is_interrupt_entry).
void use_kernel_symbols(sched::PairerOptions& pairer, std::shared_ptr<const Kallsyms> kallsyms, bool sched_frames);

// Whether `tid` is a kernel thread (PF_KTHREAD in /proc/<tid>/stat); false when it is gone.
bool proc_is_kernel_thread(uint32_t tid);

}  // namespace offwake
