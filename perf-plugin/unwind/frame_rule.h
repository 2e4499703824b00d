// One libdw frame state (the rules at one address) in the row encoding of unwind_row.h.
#pragma once

#include <cstdint>

#include "unwind_row.h"

typedef struct Dwarf_Frame_s Dwarf_Frame;  // libdw.h

namespace offwake::unwind {

struct FrameRule {
  uint32_t rule = 0;              // offwake_unwind_pack()
  const char* reason = nullptr;   // for EXPRESSION and UNSUPPORTED: which part, in a few words
  bool operator==(const FrameRule& o) const { return rule == o.rule; }
};

// The first thing that stops a walker decides the kind: a signal frame, then an undefined
// return address (the end of the stack, whatever the CFA), then the CFA, the return address
// and rbp, in that order.
FrameRule classify_frame(Dwarf_Frame* frame);

// "cfa-rsp", "plt", "end-of-stack", ...: names for the kinds, in tables and counts.
const char* kind_name(uint32_t kind);

}  // namespace offwake::unwind
