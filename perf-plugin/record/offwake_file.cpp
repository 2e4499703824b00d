#include "record/offwake_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

#include "offwake.h"
#include "samples/aggregate_samples.h"

namespace offwake {

Status write_pseudo_waker_comm(perfdata::PerfDataWriter& w, const OffwakeEventIds& ids, const PseudoWaker& p) {
  perfdata::CommRecord c;
  c.pid = c.tid = p.tid;
  c.comm = p.comm;
  c.sample_id = {p.tid, p.tid, 0, ids.waker, 0, 0};
  return w.write(c);
}

Status write_pseudo_waker_comms(perfdata::PerfDataWriter& w, const OffwakeEventIds& ids) {
  for (const PseudoWaker& p : kPseudoWakers) OFFWAKE_TRY(write_pseudo_waker_comm(w, ids, p));
  return ok_status();
}

const PseudoWaker* pseudo_waker_of_tid(uint32_t tid) {
  for (const PseudoWaker& p : kPseudoWakers)
    if (p.tid == tid) return &p;
  return nullptr;
}

Status write_losses_and_stats(perfdata::PerfDataWriter& w, const OffwakeEventIds& ids, const RecordStats& stats,
                              uint64_t time) {
  // Blocks that never became a sample are lost samples of offwake-time, as perf counts them.
  if (uint64_t lost = stats.lost_blocks()) {
    perfdata::LostSamplesRecord l;
    l.lost = lost;
    l.sample_id.id = ids.time;
    l.sample_id.time = time;
    OFFWAKE_TRY(w.write(l));
  }
  if (w.mode() == perfdata::Mode::kFile) w.add_feature(kFeatOffwakeStats, stats.encode());
  return ok_status();
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

Status move_old_output(const std::string& output) {
  if (output == "-" || !path_exists(output)) return ok_status();
  const std::string old = output + ".old";
  if (rename(output.c_str(), old.c_str()) != 0) return Error::from_errno("cannot rename " + output + " to " + old);
  return ok_status();
}

// S: interruptible sleep; D: uninterruptible sleep (the load average's); I: an idle kernel
// thread's wait (TASK_IDLE, D with NOLOAD), which is not what "D" means to anyone.
Result<uint32_t> parse_state_letters(const std::string& s) {
  uint32_t mask = 0;
  for (char c : s) {
    if (c == 'S') mask |= OFFWAKE_WANT_S;
    else if (c == 'D') mask |= OFFWAKE_WANT_D;
    else if (c == 'I') mask |= OFFWAKE_WANT_I;
    else return Error::usage("--state takes letters from S, D and I (e.g. SD), not '" + s + "'", EINVAL);
  }
  if (!mask) return Error::usage("--state takes letters from S, D and I (e.g. SD)", EINVAL);
  return mask;
}

}  // namespace offwake
