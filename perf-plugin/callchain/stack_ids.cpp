#include "callchain/stack_ids.h"

#include <cerrno>
#include <cstdint>

namespace offwake {

StackLosses& StackLosses::operator+=(const StackLosses& o) {
  walk_failed += o.walk_failed;
  collisions += o.collisions;
  map_full += o.map_full;
  other_errors += o.other_errors;
  lookup_failed += o.lookup_failed;
  emptied += o.emptied;
  no_user_context += o.no_user_context;
  not_traced += o.not_traced;
  no_task_work += o.no_task_work;
  exec += o.exec;
  in_progress += o.in_progress;
  return *this;
}

std::span<const uint64_t> CallchainBuilder::half(int64_t id, StackLosses& losses) {
  if (id == kNoStack) return {};
  if (id < 0) {
    switch (-id) {
      case EFAULT: ++losses.walk_failed; break;
      case EEXIST: ++losses.collisions; break;
      case ENOMEM:
      case E2BIG: ++losses.map_full; break;
      case ENODATA: ++losses.no_user_context; break;
      case ESRCH: ++losses.not_traced; break;
      case ENOLCK: ++losses.no_task_work; break;
      case ESTALE: ++losses.exec; break;
      case EINPROGRESS: ++losses.in_progress; break;
      default: ++losses.other_errors; break;
    }
    return {};
  }
  auto frames = source_.lookup(static_cast<uint64_t>(id));
  if (!frames) {
    ++(frames.error().errnum() == kStackEmptied ? losses.emptied : losses.lookup_failed);
    return {};
  }
  return *frames;
}

Callchain CallchainBuilder::build(StackIds ids) {
  auto kernel = half(ids.kernel, kernel_losses_);
  auto user = half(ids.user, user_losses_);
  return Callchain::from_stacks(kernel, user);
}

}  // namespace offwake
