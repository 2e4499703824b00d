// Wakers that are not a thread, and blocks without a waker, as they appear in perf.data.
#pragma once

#include <cstdint>

#include "block_rules.h"

namespace offwake {

// Wakers that are not a thread get a thread of their own in perf.data, far above pid_max, with
// a COMM that says what they are, so that perf shows "[hardirq]" rather than a bystander.
struct PseudoWaker {
  uint32_t tid;
  const char* comm;
};
// The interrupt contexts' names are the ones the back ends put in the key (block_rules.h).
constexpr PseudoWaker kHardirqWaker{0x7ffffff0, OFFWAKE_HARDIRQ_COMM};
constexpr PseudoWaker kSoftirqWaker{0x7ffffff1, OFFWAKE_SOFTIRQ_COMM};
constexpr PseudoWaker kNmiWaker{0x7ffffff2, OFFWAKE_NMI_COMM};
static_assert(sizeof OFFWAKE_HARDIRQ_COMM <= OFFWAKE_COMM_LEN && sizeof OFFWAKE_SOFTIRQ_COMM <= OFFWAKE_COMM_LEN &&
              sizeof OFFWAKE_NMI_COMM <= OFFWAKE_COMM_LEN);
constexpr PseudoWaker kUnknownWaker{0x7ffffff3, "[no waker seen]"};
constexpr PseudoWaker kStillBlocked{0x7ffffff4, "[still blocked]"};
// 0x7ffffff5 was "[woken early]": a block woken before --min-block has its waker named now
// (OFFWAKE_WAKER_EARLY), as a thread or interrupt context, without stacks.
constexpr PseudoWaker kPseudoWakers[] = {kHardirqWaker, kSoftirqWaker, kNmiWaker, kUnknownWaker, kStillBlocked};

// The pseudo-thread for a key's waker, or nullptr when the waker is a real thread.
const PseudoWaker* pseudo_waker(uint32_t waker_flags);

// The pseudo-thread whose tid this is, or nullptr for a real thread.
const PseudoWaker* pseudo_waker_of_tid(uint32_t tid);

}  // namespace offwake
