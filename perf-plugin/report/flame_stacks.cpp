// Profile -> flame stacks: the off-wake layout (blocked stack up from the bottom, the waker's
// stack inverted above a separator) or, with --wallclock, on- and off-CPU stacks side by side.
#include "report/flamegraph.h"
#include "report/folded.h"

namespace offwake::report {

namespace {

FlameKind kind_of(const Frame& f, bool waker) {
  if (waker) return f.kernel ? FlameKind::kWakerKernel : FlameKind::kWakerUser;
  return f.kernel ? FlameKind::kKernel : FlameKind::kUser;
}

}  // namespace

std::vector<FlameStack> flame_stacks(const Profile& profile, bool wallclock) {
  std::vector<FlameStack> out;
  out.reserve(profile.stacks.size());
  for (const Stack& s : profile.stacks) {
    if (!wallclock && s.kind != Kind::kOffCpu) continue;
    FlameStack fs;
    fs.value = s.ns;
    fs.frames.push_back({folded_comm(s.thread.comm), FlameKind::kThread});
    for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it)
      fs.frames.push_back({folded_frame(it->name), kind_of(*it, false)});
    if (wallclock) {
      fs.frames.push_back(s.kind == Kind::kOnCpu ? FlameFrame{"[on-cpu]", FlameKind::kOnCpu}
                                                 : FlameFrame{"[off-cpu]", FlameKind::kOffCpu});
    } else if (!profile.wakers_dropped) {
      fs.frames.push_back({kSeparator, FlameKind::kSeparator});
      if (s.waker) {
        for (const Frame& f : s.waker_frames) fs.frames.push_back({folded_frame(f.name), kind_of(f, true)});
        fs.frames.push_back({folded_comm(s.waker->comm), FlameKind::kWakerThread});
      } else {
        fs.frames.push_back({kUnknownWaker, FlameKind::kWakerThread});
      }
    }
    out.push_back(std::move(fs));
  }
  return out;
}

}  // namespace offwake::report
