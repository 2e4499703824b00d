// Profile -> flame stacks: the off-wake layout (blocked stack up from the bottom, the waker's
// stack inverted above a separator, then each further hop of a wakeup chain: its blocked
// stack, its waker's stack inverted, each above a separator) or, with --wallclock, on- and
// off-CPU stacks side by side.
#include "report/flamegraph.h"
#include "report/folded.h"

namespace offwake::report {

namespace {

FlameKind kind_of(const Frame& f, bool waker) {
  if (waker) return f.kernel ? FlameKind::kWakerKernel : FlameKind::kWakerUser;
  return f.kernel ? FlameKind::kKernel : FlameKind::kUser;
}

FlameKind kind_of(PathPart part, const Frame* f) {
  switch (part) {
    case PathPart::kThread: return FlameKind::kThread;
    case PathPart::kBlocked: return kind_of(*f, false);
    case PathPart::kSeparator: return FlameKind::kSeparator;
    case PathPart::kWaker: return kind_of(*f, true);
    case PathPart::kNotTaken: return FlameKind::kWakerThread;  // a name about the waker, not a frame
    default: return FlameKind::kWakerThread;
  }
}

}  // namespace

std::vector<FlameStack> flame_stacks(const Profile& profile, bool wallclock) {
  std::vector<FlameStack> out;
  out.reserve(profile.stacks.size());
  for (const Stack& s : profile.stacks) {
    if (!wallclock && s.kind != Kind::kOffCpu) continue;
    FlameStack fs;
    fs.value = s.ns;
    if (wallclock) {
      fs.frames.push_back({folded_comm(s.thread.comm), FlameKind::kThread});
      for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it)
        fs.frames.push_back({folded_frame(it->name), kind_of(*it, false)});
      fs.frames.push_back(s.kind == Kind::kOnCpu ? FlameFrame{"[on-cpu]", FlameKind::kOnCpu}
                                                 : FlameFrame{"[off-cpu]", FlameKind::kOffCpu});
    } else {
      // The folded line's names, bottom up: hops stack upward in the order of the line.
      walk_offwake_path(s, !profile.wakers_dropped, [&](std::string name, PathPart part, const Frame* f) {
        fs.frames.push_back({std::move(name), kind_of(part, f)});
      });
    }
    out.push_back(std::move(fs));
  }
  return out;
}

}  // namespace offwake::report
