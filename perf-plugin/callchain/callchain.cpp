#include "callchain/callchain.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <string>

namespace offwake {

uint64_t context_marker(FrameContext context) {
  switch (context) {
    case FrameContext::kKernel: return PERF_CONTEXT_KERNEL;
    case FrameContext::kUser: return PERF_CONTEXT_USER;
    case FrameContext::kHypervisor: return PERF_CONTEXT_HV;
    case FrameContext::kGuestKernel: return PERF_CONTEXT_GUEST_KERNEL;
    case FrameContext::kGuestUser: return PERF_CONTEXT_GUEST_USER;
  }
  return PERF_CONTEXT_USER;
}

static bool marker_context(uint64_t v, FrameContext* out) {
  switch (v) {
    case PERF_CONTEXT_KERNEL: *out = FrameContext::kKernel; return true;
    case PERF_CONTEXT_USER: *out = FrameContext::kUser; return true;
    case PERF_CONTEXT_HV: *out = FrameContext::kHypervisor; return true;
    case PERF_CONTEXT_GUEST_KERNEL: *out = FrameContext::kGuestKernel; return true;
    case PERF_CONTEXT_GUEST_USER: *out = FrameContext::kGuestUser; return true;
    default: return false;
  }
}

Result<Callchain> Callchain::from_perf_ips(std::span<const uint64_t> ips) {
  Callchain chain;
  chain.frames_.reserve(ips.size());
  bool have_context = false, skipping = false;
  FrameContext context = FrameContext::kUser;
  for (size_t i = 0; i < ips.size(); ++i) {
    uint64_t v = ips[i];
    if (v >= PERF_CONTEXT_MAX) {
      if (v == PERF_CONTEXT_GUEST) continue;  // announces guest frames; their own markers follow
      FrameContext next;
      if (!marker_context(v, &next)) {
        if (!have_context)
          return Error::bad_input("callchain entry " + std::to_string(i) + " is an unknown context marker");
        skipping = chain.cut_ = true;
        continue;
      }
      // The same context again continues the walk that went astray; another one is a new walk.
      if (skipping && next == context) continue;
      skipping = false;
      context = next;
      have_context = true;
      continue;
    }
    if (!have_context)
      return Error::bad_input("callchain entry " + std::to_string(i) + " comes before any context marker");
    if (!skipping) chain.frames_.push_back({v, context});
  }
  return chain;
}

Callchain Callchain::from_stacks(std::span<const uint64_t> kernel, std::span<const uint64_t> user) {
  Callchain chain;
  auto add_half = [&chain](std::span<const uint64_t> half, FrameContext context) {
    for (uint64_t ip : half) {
      if (ip == 0) return;  // the stack map's padding: the walk ended there
      if (ip >= PERF_CONTEXT_MAX) {
        chain.cut_ = true;
        return;
      }
      chain.frames_.push_back({ip, context});
    }
  };
  add_half(kernel, FrameContext::kKernel);
  add_half(user, FrameContext::kUser);
  return chain;
}

void Callchain::set_user_frames(std::span<const uint64_t> ips) {
  std::erase_if(frames_, [](const Frame& f) { return f.context == FrameContext::kUser; });
  for (uint64_t ip : ips) frames_.push_back({ip, FrameContext::kUser});
}

std::vector<uint64_t> Callchain::to_perf_ips() const {
  std::vector<uint64_t> out;
  out.reserve(frames_.size() + 2);
  bool first = true;
  FrameContext current = FrameContext::kUser;
  for (const Frame& f : frames_) {
    if (first || f.context != current) {
      out.push_back(context_marker(f.context));
      current = f.context;
      first = false;
    }
    out.push_back(f.ip);
  }
  return out;
}

size_t Callchain::count(FrameContext context) const {
  return std::count_if(frames_.begin(), frames_.end(),
                       [&](const Frame& f) { return f.context == context; });
}

uint16_t Callchain::leaf_cpumode() const {
  if (frames_.empty()) return PERF_RECORD_MISC_USER;
  switch (frames_.front().context) {
    case FrameContext::kKernel: return PERF_RECORD_MISC_KERNEL;
    case FrameContext::kUser: return PERF_RECORD_MISC_USER;
    case FrameContext::kHypervisor: return PERF_RECORD_MISC_HYPERVISOR;
    case FrameContext::kGuestKernel: return PERF_RECORD_MISC_GUEST_KERNEL;
    case FrameContext::kGuestUser: return PERF_RECORD_MISC_GUEST_USER;
  }
  return PERF_RECORD_MISC_USER;
}

}  // namespace offwake
