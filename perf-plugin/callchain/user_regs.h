// The user registers of a stack copy, for the architecture this is built for: which ones a
// --call-graph dwarf event asks for (tracking/), and where each DWARF register an unwinder
// starts from is among them (unwind/). perf numbers the registers of a sample its own way
// (asm/perf_regs.h); DWARF numbers them as the architecture's psABI does.
#pragma once

#include <asm/perf_regs.h>

#include <cstdint>

namespace offwake {

#if defined(__x86_64__)

// perf's PERF_REGS_MASK for x86-64 (tools/perf/arch/x86/include/perf_regs.h), what
// perf record --call-graph dwarf asks for: every general register, ip, flags, cs and ss; not
// ds, es, fs and gs.
constexpr uint64_t kUserRegsMask =
    ((uint64_t{1} << PERF_REG_X86_64_MAX) - 1) &
    ~((uint64_t{1} << PERF_REG_X86_DS) | (uint64_t{1} << PERF_REG_X86_ES) | (uint64_t{1} << PERF_REG_X86_FS) |
      (uint64_t{1} << PERF_REG_X86_GS));

// DWARF register n of the x86-64 psABI is perf's register kDwarfToPerfReg[n]: rax, rdx, rcx,
// rbx, rsi, rdi, rbp, rsp, r8-r15, and 16, the return address column, for rip.
constexpr unsigned kDwarfToPerfReg[] = {
    PERF_REG_X86_AX, PERF_REG_X86_DX, PERF_REG_X86_CX,  PERF_REG_X86_BX,  PERF_REG_X86_SI,  PERF_REG_X86_DI,
    PERF_REG_X86_BP, PERF_REG_X86_SP, PERF_REG_X86_R8,  PERF_REG_X86_R9,  PERF_REG_X86_R10, PERF_REG_X86_R11,
    PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15, PERF_REG_X86_IP};
constexpr unsigned kDwarfRegSp = 7, kDwarfRegPc = 16;

#else
#error "user stack copies are unwound on x86-64 only: add this architecture's registers here"
#endif

constexpr unsigned kDwarfRegs = sizeof kDwarfToPerfReg / sizeof kDwarfToPerfReg[0];

}  // namespace offwake
