// Turns the stack ids a BPF program got from bpf_get_stackid() into a Callchain, counting
// every stack that could not be had and why.
#pragma once

#include <cerrno>
#include <cstdint>
#include <span>
#include <vector>

#include "callchain/callchain.h"
#include "util/result.h"

namespace offwake {

// A stack id as the BPF programs store it: >= 0 an id (see StackTraceSource), < 0 a
// negative errno that says why there is no stack. kNoStack marks a half that was not asked
// for (the user stack of a kernel thread).
constexpr int64_t kNoStack = INT64_MIN;

struct StackIds {
  int64_t kernel = kNoStack;
  int64_t user = kNoStack;
};

// The errno of a lookup() whose stack was emptied from its store before it was asked for
// (bpf::StackTraceMap::end_window()).
constexpr int kStackEmptied = ESTALE;

// Where stack ids are looked up: in production the BPF stack_trace map (ids below 2^32)
// and the BPF stack store (ids with bit 62 set, OFFWAKE_STORE_ID).
class StackTraceSource {
 public:
  virtual ~StackTraceSource() = default;
  // The frames of stack `id` (>= 0), leaf first; valid as long as the source.
  virtual Result<std::span<const uint64_t>> lookup(uint64_t id) const = 0;
};

// Why stacks are missing, per half. Every stack the builder could not produce lands in
// exactly one of these, so they add up to total().
struct StackLosses {
  // Taken, and failed.
  uint64_t walk_failed = 0;   // -EFAULT: the unwinder gave no frame
  uint64_t collisions = 0;    // -EEXIST: another stack owned the bucket, and the store too
  uint64_t map_full = 0;      // -ENOMEM/-E2BIG: no free entry in the stack store
  uint64_t other_errors = 0;  // any other negative id
  uint64_t lookup_failed = 0; // the id was valid but its entry could not be read back
  uint64_t emptied = 0;       // a stored stack emptied from the store (--switch-output)
                              // three emptyings or more before its sample was written
                              // (kStackEmptied)
  // Not taken, and why.
  uint64_t no_user_context = 0;  // the task had no user memory left (exiting)
  uint64_t not_traced = 0;       // a blocked kernel stack whose switch-in was never traced
  uint64_t no_task_work = 0;     // a deferred user stack: the task's return to user space
                                 // could not be hooked
  uint64_t exec = 0;             // the task exec'd before its user stack was taken
  uint64_t in_progress = 0;      // a chain hop's user stack, still to be walked when its
                                 // thread woke the next one (--chain-depth)
  uint64_t total() const {
    return walk_failed + collisions + map_full + other_errors + lookup_failed + emptied + no_user_context +
           not_traced + no_task_work + exec + in_progress;
  }
  StackLosses& operator+=(const StackLosses& o);
};

class CallchainBuilder {
 public:
  explicit CallchainBuilder(const StackTraceSource& source) : source_(source) {}

  // The kernel half then the user half; a missing half is counted and left out.
  Callchain build(StackIds ids);

  const StackLosses& kernel_losses() const { return kernel_losses_; }
  const StackLosses& user_losses() const { return user_losses_; }

 private:
  std::span<const uint64_t> half(int64_t id, StackLosses& losses);

  const StackTraceSource& source_;
  StackLosses kernel_losses_;
  StackLosses user_losses_;
};

}  // namespace offwake
