// The one callchain type: perf sample callchains and BPF stack-map stacks both become a
// Callchain, and every sample is serialised from one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "util/result.h"

namespace offwake {

enum class FrameContext : uint8_t { kKernel, kUser, kHypervisor, kGuestKernel, kGuestUser };

struct Frame {
  uint64_t ip;
  FrameContext context;
  bool operator==(const Frame&) const = default;
};

class Callchain {
 public:
  Callchain() = default;

  // From PERF_SAMPLE_CALLCHAIN entries as the kernel writes them: PERF_CONTEXT_* markers
  // followed by the ips of that context, leaf first. Entries before any marker are rejected.
  // An entry in the markers' range that is no marker ends its context's frames, and the chain
  // says so (cut()): the kernel's frame-pointer walk of code built without frame pointers
  // stores whatever words it reads (-1 is seen), and perf drops such a callchain, not its
  // sample. The frames before it are kept, and a later context's marker starts its frames.
  static Result<Callchain> from_perf_ips(std::span<const uint64_t> ips);

  // From the two halves a BPF stack map returns, each leaf first; zero entries end a half, and
  // so does an entry perf would take for a context marker (>= PERF_CONTEXT_MAX): a user walk
  // that left the frame chain (the kernel's bpf_get_stackid stores what it reads) gives such
  // values, and perf drops a callchain that holds one. The frames before it are kept, and the
  // chain says it was cut (cut()), as from_perf_ips() does for the same walk.
  static Callchain from_stacks(std::span<const uint64_t> kernel, std::span<const uint64_t> user);

  void push(uint64_t ip, FrameContext context) { frames_.push_back({ip, context}); }

  // Replaces the user frames by `ips` (leaf first), after the other contexts' frames: where
  // perf puts the frames it unwinds from a user stack copy (--call-graph dwarf), whose
  // samples' callchains hold the kernel's frames only.
  void set_user_frames(std::span<const uint64_t> ips);

  // Removes leading (leaf-side) frames of `context` while `drop(ip)` says so; returns how many.
  template <typename Pred>
  size_t drop_leading(FrameContext context, Pred drop) {
    size_t n = 0;
    while (n < frames_.size() && frames_[n].context == context && drop(frames_[n].ip)) ++n;
    frames_.erase(frames_.begin(), frames_.begin() + static_cast<ptrdiff_t>(n));
    return n;
  }

  // Serialises with a context marker wherever the context changes (perf's layout).
  std::vector<uint64_t> to_perf_ips() const;

  const std::vector<Frame>& frames() const { return frames_; }
  bool empty() const { return frames_.empty(); }
  size_t size() const { return frames_.size(); }
  size_t count(FrameContext context) const;

  // PERF_RECORD_MISC_KERNEL or _USER (or _HYPERVISOR...) for the leaf frame; USER if empty.
  uint16_t leaf_cpumode() const;

  // A walk went astray: from_perf_ips() met an entry that is no context marker, or
  // from_stacks() one in the markers' range, and the frames after it were left out. Not
  // written to perf.data, which has no place for it: to_perf_ips() of a cut chain reads back
  // as one that is not.
  bool cut() const { return cut_; }

  bool operator==(const Callchain&) const = default;

 private:
  std::vector<Frame> frames_;  // leaf first
  bool cut_ = false;
};

uint64_t context_marker(FrameContext context);

}  // namespace offwake
