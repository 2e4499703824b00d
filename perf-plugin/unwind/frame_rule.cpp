#include "unwind/frame_rule.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <array>
#include <cstddef>
#include <optional>

namespace offwake::unwind {
namespace {

// DWARF register numbers of the x86-64 psABI.
constexpr int kRdi = 5;
constexpr int kRbp = 6;
constexpr int kRsp = 7;
constexpr int kReturnAddress = 16;

FrameRule make(uint32_t kind, const char* reason = nullptr, uint32_t cfa_offset = 0, int32_t rbp = 0) {
  return FrameRule{offwake_unwind_pack(kind, cfa_offset, rbp), reason};
}

// binutils' lazy PLT CFA: DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
// DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus. The push in each 16-byte entry
// comes N bytes in: 11 for the classic entry, 10 when it starts with endbr64. Returns N.
std::optional<uint32_t> plt_threshold(const Dwarf_Op* ops, size_t n) {
  if (n != 9) return std::nullopt;
  const std::array<uint8_t, 9> shape = {DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
                                        DW_OP_ge,    DW_OP_lit3,   DW_OP_shl,   DW_OP_plus};
  for (size_t i = 0; i < n; ++i)
    if (i != 4 && ops[i].atom != shape[i]) return std::nullopt;
  if (ops[0].number != 8 || ops[1].number != 0) return std::nullopt;
  if (ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15) return std::nullopt;
  return ops[4].atom - DW_OP_lit0;
}

enum class Saved { kUnchanged, kUndefined, kAtCfa, kInRdi, kOther, kExpression, kError };

// Where a register of the caller is, in the forms libdw gives (libdw.h, dwarf_frame_register):
// no ops and a null pointer for "same value", no ops in our buffer for "undefined",
// {DW_OP_call_frame_cfa[, DW_OP_plus_uconst N]} in our buffer for "at CFA+N", {DW_OP_regx R}
// for "in register R", any other op in our buffer for a value rule, and libdw's own ops for a
// DWARF expression.
Saved saved_at(Dwarf_Frame* frame, int regno, int64_t* offset) {
  Dwarf_Op mem[3];
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  if (dwarf_frame_register(frame, regno, mem, &ops, &n) != 0) return Saved::kError;
  if (n == 0) return ops == nullptr ? Saved::kUnchanged : Saved::kUndefined;
  if (ops != mem) return Saved::kExpression;
  if (n == 1 && ops[0].atom == DW_OP_regx && ops[0].number == kRdi) return Saved::kInRdi;
  if (ops[0].atom != DW_OP_call_frame_cfa) return Saved::kOther;
  if (n == 1) {
    *offset = 0;
    return Saved::kAtCfa;
  }
  if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
    *offset = static_cast<int64_t>(ops[1].number);  // libdw stores a negative N wrapped
    return Saved::kAtCfa;
  }
  return Saved::kOther;  // a trailing DW_OP_stack_value: val_offset, a value not a location
}

}  // namespace

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case OFFWAKE_UNWIND_NONE: return "none";
    case OFFWAKE_UNWIND_CFA_RSP: return "cfa-rsp";
    case OFFWAKE_UNWIND_CFA_RBP: return "cfa-rbp";
    case OFFWAKE_UNWIND_PLT: return "plt";
    case OFFWAKE_UNWIND_END_OF_STACK: return "end-of-stack";
    case OFFWAKE_UNWIND_SIGNAL: return "signal";
    case OFFWAKE_UNWIND_EXPRESSION: return "expression";
    case OFFWAKE_UNWIND_UNSUPPORTED: return "unsupported";
    case OFFWAKE_UNWIND_RA_RDI: return "ra-rdi";
    default: return "?";
  }
}

FrameRule classify_frame(Dwarf_Frame* frame) {
  bool signal = false;
  int ra_reg = dwarf_frame_info(frame, nullptr, nullptr, &signal);
  if (ra_reg < 0) return make(OFFWAKE_UNWIND_UNSUPPORTED, "libdw: no frame information");
  if (signal) return make(OFFWAKE_UNWIND_SIGNAL);
  if (ra_reg != kReturnAddress) return make(OFFWAKE_UNWIND_UNSUPPORTED, "return address column not rip");

  int64_t ra_offset = 0;
  Saved ra = saved_at(frame, kReturnAddress, &ra_offset);
  if (ra == Saved::kUndefined) return make(OFFWAKE_UNWIND_END_OF_STACK);

  Dwarf_Op* cfa_ops = nullptr;
  size_t cfa_n = 0;
  if (dwarf_frame_cfa(frame, &cfa_ops, &cfa_n) != 0 || cfa_n == 0)
    return make(OFFWAKE_UNWIND_UNSUPPORTED, "CFA undefined");
  uint32_t kind = OFFWAKE_UNWIND_NONE;
  uint32_t cfa_offset = 0;
  if (cfa_n == 1 && cfa_ops[0].atom == DW_OP_bregx) {
    // libdw's form of DW_CFA_def_cfa: register in `number`, offset in `number2`.
    auto offset = static_cast<int64_t>(cfa_ops[0].number2);
    if (cfa_ops[0].number == kRsp)
      kind = OFFWAKE_UNWIND_CFA_RSP;
    else if (cfa_ops[0].number == kRbp)
      kind = OFFWAKE_UNWIND_CFA_RBP;
    else
      return make(OFFWAKE_UNWIND_UNSUPPORTED, "CFA from a register other than rsp or rbp");
    if (offset < 0 || offset > OFFWAKE_UNWIND_CFA_MAX)
      return make(OFFWAKE_UNWIND_UNSUPPORTED, "CFA offset out of range");
    cfa_offset = static_cast<uint32_t>(offset);
  } else if (auto threshold = plt_threshold(cfa_ops, cfa_n)) {
    kind = OFFWAKE_UNWIND_PLT;
    cfa_offset = *threshold;
  } else {
    return make(OFFWAKE_UNWIND_EXPRESSION, "CFA expression");
  }

  switch (ra) {
    case Saved::kAtCfa:
      if (ra_offset != -8) return make(OFFWAKE_UNWIND_UNSUPPORTED, "return address not at CFA-8");
      break;
    case Saved::kInRdi:
      // vfork: the return address in rdi, from rsp, rbp untouched (the walker has rdi only in a
      // stack's first frame).
      if (kind != OFFWAKE_UNWIND_CFA_RSP)
        return make(OFFWAKE_UNWIND_UNSUPPORTED, "return address in rdi, CFA not from rsp");
      if (int64_t unused = 0; saved_at(frame, kRbp, &unused) != Saved::kUnchanged)
        return make(OFFWAKE_UNWIND_UNSUPPORTED, "return address in rdi, rbp saved");
      return make(OFFWAKE_UNWIND_RA_RDI, nullptr, cfa_offset);
    case Saved::kExpression: return make(OFFWAKE_UNWIND_EXPRESSION, "return address expression");
    case Saved::kError: return make(OFFWAKE_UNWIND_UNSUPPORTED, "libdw: return address rule unreadable");
    default: return make(OFFWAKE_UNWIND_UNSUPPORTED, "return address in a register or unchanged");
  }

  int64_t rbp_offset = 0;
  switch (saved_at(frame, kRbp, &rbp_offset)) {
    case Saved::kUnchanged: rbp_offset = 0; break;
    case Saved::kAtCfa:
      if (rbp_offset == 0 || rbp_offset % 8 != 0 || rbp_offset < OFFWAKE_UNWIND_RBP_MIN ||
          rbp_offset > OFFWAKE_UNWIND_RBP_MAX)
        return make(OFFWAKE_UNWIND_UNSUPPORTED, "rbp saved out of range");
      break;
    case Saved::kExpression: return make(OFFWAKE_UNWIND_EXPRESSION, "rbp expression");
    case Saved::kUndefined: return make(OFFWAKE_UNWIND_UNSUPPORTED, "rbp undefined");
    case Saved::kInRdi:
    case Saved::kOther: return make(OFFWAKE_UNWIND_UNSUPPORTED, "rbp in a register");
    case Saved::kError: return make(OFFWAKE_UNWIND_UNSUPPORTED, "libdw: rbp rule unreadable");
  }
  if (kind == OFFWAKE_UNWIND_PLT && rbp_offset != 0)
    return make(OFFWAKE_UNWIND_EXPRESSION, "CFA expression");
  return make(kind, nullptr, cfa_offset, static_cast<int32_t>(rbp_offset));
}

}  // namespace offwake::unwind
