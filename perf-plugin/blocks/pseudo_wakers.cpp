#include "blocks/pseudo_wakers.h"

#include "offwake.h"

namespace offwake {

const PseudoWaker* pseudo_waker(uint32_t flags) {
  if (flags & OFFWAKE_WAKER_STILL_BLOCKED) return &kStillBlocked;
  if (flags & OFFWAKE_WAKER_NONE) return &kUnknownWaker;
  if (flags & OFFWAKE_WAKER_NMI) return &kNmiWaker;
  if (flags & OFFWAKE_WAKER_HARDIRQ) return &kHardirqWaker;
  if (flags & OFFWAKE_WAKER_SOFTIRQ) return &kSoftirqWaker;
  return nullptr;
}

const PseudoWaker* pseudo_waker_of_tid(uint32_t tid) {
  for (const PseudoWaker& p : kPseudoWakers)
    if (p.tid == tid) return &p;
  return nullptr;
}

}  // namespace offwake
