// What perf record --call-graph dwarf takes in place of the user half of a callchain
// (PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER): the thread's user registers and a copy of
// its user stack from the stack pointer up. unwind/ turns it into user frames, as perf does at
// report time, and counts by cause what it could not turn (UserUnwindCounts).
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

namespace offwake {

struct UserStackDump {
  uint64_t abi = 0;             // PERF_SAMPLE_REGS_ABI_*; NONE (0): no user context, no registers
  uint64_t regs_mask = 0;       // attr.sample_regs_user: which registers `regs` holds
  std::vector<uint64_t> regs;   // one per bit of the mask, lowest bit first
  // The copy: `stack_size` bytes were asked for (the record's size; 0: none), of which the
  // kernel filled `stack` (its dyn_size), from the stack pointer up. Fewer than asked: the
  // copy reached the top of the stack (or a page it could not read).
  uint64_t stack_size = 0;
  std::vector<uint8_t> stack;

  // The copy may stop short of the stack's top: it is as large as was asked.
  bool stack_copy_full() const { return !stack.empty() && stack.size() >= stack_size; }
  // Register `perf_reg` (asm/perf_regs.h numbering), when the sample has it.
  std::optional<uint64_t> reg(unsigned perf_reg) const {
    if (abi == 0 || perf_reg >= 64 || !(regs_mask >> perf_reg & 1)) return std::nullopt;
    const size_t at = static_cast<size_t>(std::popcount(regs_mask & ((uint64_t{1} << perf_reg) - 1)));
    if (at >= regs.size()) return std::nullopt;
    return regs[at];
  }
  bool operator==(const UserStackDump&) const = default;
};

// What became of the user stacks a recording unwound from stack copies. Every stack asked for
// lands in exactly one of complete .. no_mapping, so they add up to `stacks`.
struct UserUnwindCounts {
  uint64_t stacks = 0;          // user stacks asked for (a blocked thread's, a waker's)
  uint64_t complete = 0;        // down to the outermost frame (_start, clone3: no return address)
  uint64_t copy_too_small = 0;  // ended at a read beyond the stack copy (dwarf,SIZE)
  uint64_t max_stack = 0;       // cut at --max-stack frames
  uint64_t stopped = 0;         // ended early otherwise: a pc without unwind rules or outside the
                                // mappings, a rule that gave no caller
  uint64_t no_registers = 0;    // not unwound: no user registers (no user context), or not those
                                // unwinding needs
  uint64_t empty_copy = 0;      // not unwound: nothing copied (the pc alone is given)
  uint64_t no_mapping = 0;      // not unwound: the pc is in no usable file mapping (JIT code,
                                // a file gone or rebuilt): the pc alone is given
  uint64_t files_unusable = 0;  // mapped files that could not be read or whose build id differs
                                // from the recording's, once per process
  uint64_t frames = 0;          // user frames given
  uint64_t ns = 0;              // time spent unwinding

  uint64_t ended_early() const { return copy_too_small + max_stack + stopped; }
  uint64_t not_unwound() const { return no_registers + empty_copy + no_mapping; }
};

}  // namespace offwake
