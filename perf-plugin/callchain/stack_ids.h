// Turns the stack ids a BPF program got from bpf_get_stackid() into a Callchain, counting
// every stack that could not be had and why.
#pragma once

#include <cstdint>
#include <vector>

#include "callchain/callchain.h"
#include "util/result.h"

namespace offwake {

// A stack id as bpf_get_stackid() returned it: >= 0 an id, < 0 a negative errno.
// kNoStack marks a half that was not asked for (the user stack of a kernel thread).
constexpr int64_t kNoStack = INT64_MIN;

struct StackIds {
  int64_t kernel = kNoStack;
  int64_t user = kNoStack;
};

// Where stack ids are looked up: the BPF stack_trace map in production.
class StackTraceSource {
 public:
  virtual ~StackTraceSource() = default;
  // The frames of stack `id`, leaf first, zero-terminated or full length.
  virtual Result<std::vector<uint64_t>> lookup(uint32_t id) const = 0;
};

// Why stacks are missing, per half. Every stack the builder could not produce lands here.
struct StackLosses {
  uint64_t walk_failed = 0;   // -EFAULT: the unwinder could not walk (no frame pointers, paged out)
  uint64_t collisions = 0;    // -EEXIST: another stack owned the hash bucket
  uint64_t map_full = 0;      // -ENOMEM/-E2BIG: no free entry in the stack map
  uint64_t other_errors = 0;  // any other negative id
  uint64_t lookup_failed = 0; // the id was valid but its entry could not be read back
  uint64_t total() const { return walk_failed + collisions + map_full + other_errors + lookup_failed; }
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
  std::vector<uint64_t> half(int64_t id, StackLosses& losses);

  const StackTraceSource& source_;
  StackLosses kernel_losses_;
  StackLosses user_losses_;
};

}  // namespace offwake
