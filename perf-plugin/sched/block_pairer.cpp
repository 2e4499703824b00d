#include "sched/block_pairer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "block_rules.h"

namespace offwake::sched {

namespace {

void copy_comm(char (&dst)[OFFWAKE_COMM_LEN], const std::string& src) {
  std::memset(dst, 0, sizeof dst);
  std::memcpy(dst, src.data(), std::min(src.size(), sizeof dst - 1));
}

// The key's identity of a thread: its tid's generation (exec and exit start a new one).
uint64_t ident(uint32_t tid, uint64_t generation) { return (uint64_t{tid} << 32 | generation) | 1; }

}  // namespace

BlockPairer::Thread& BlockPairer::thread(uint32_t tid) { return threads_[tid]; }

bool BlockPairer::kernel_thread(uint32_t tid) const { return opt_.is_kernel_thread && opt_.is_kernel_thread(tid); }

bool BlockPairer::wanted(uint32_t tid, const Thread& t) const {
  if (!opt_.tids.empty() && !opt_.tids.count(tid)) return false;
  if (!opt_.tgids.empty() && !opt_.tgids.count(t.tgid)) return false;
  if (opt_.user_threads_only || opt_.kernel_threads_only) {
    const bool k = kernel_thread(tid);
    if (opt_.user_threads_only && k) return false;
    if (opt_.kernel_threads_only && !k) return false;
  }
  return true;
}

int64_t BlockPairer::intern(std::vector<uint64_t> frames, int half) {
  ++counters_.stack_captures[half];
  if (frames.empty()) {
    ++counters_.stack_walk_failed[half];
    return -EFAULT;
  }
  auto [it, added] = stack_ids_[half].try_emplace(frames, static_cast<int64_t>(stacks_.size()));
  if (added) stacks_.push_back(std::move(frames));
  return it->second;
}

// An event's callchain (completed by PairerOptions::complete_stack when its user half is
// wanted) into its kernel and user halves, each interned. A blocked stack loses its leading
// tracing and scheduler frames (see PairerOptions::drop_leading_kernel).
void BlockPairer::split(const SchedEvent& e, bool blocked, int64_t& kern, int64_t& user, bool complete) {
  std::optional<Callchain> completed;
  if (opt_.complete_stack && complete && user != kNoStack) opt_.complete_stack(e, completed.emplace(e.callchain));
  const Callchain& chain = completed ? *completed : e.callchain;
  std::vector<uint64_t> k, u;
  for (const Frame& f : chain.frames()) {
    if (f.context == FrameContext::kKernel) k.push_back(f.ip);
    else if (f.context == FrameContext::kUser) u.push_back(f.ip);
  }
  if (blocked && opt_.drop_leading_kernel) {
    size_t n = 0;
    while (n < k.size() && opt_.drop_leading_kernel(k[n])) ++n;
    k.erase(k.begin(), k.begin() + static_cast<ptrdiff_t>(n));
  }
  kern = intern(std::move(k), OFFWAKE_KERNEL);
  user = user == kNoStack ? kNoStack : intern(std::move(u), OFFWAKE_USER);
}

Result<std::span<const uint64_t>> BlockPairer::lookup(uint64_t id) const {
  if (id >= stacks_.size()) return Error("no stack " + std::to_string(id), ENOENT);
  return std::span<const uint64_t>(stacks_[id]);
}

void BlockPairer::fork(uint32_t parent_tgid, uint32_t child_tgid) {
  if (!opt_.follow_forks || parent_tgid == child_tgid || !opt_.tgids.count(parent_tgid)) return;
  opt_.tgids.insert(child_tgid);
  ++counters_.forks_followed;
}

void BlockPairer::exec(uint32_t tid) {
  Thread& t = thread(tid);
  ++t.generation;
}

void BlockPairer::exit(uint32_t tid, uint64_t time, uint32_t cpu) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) return;
  // An exiting thread is running: a block still open lost its switch-in, as in switch_out.
  if (it->second.blocked && it->second.block_ts <= time) end_late(tid, it->second, time, cpu);
  // A pid that comes back is another thread.
  const uint64_t next = it->second.generation + 1;
  threads_.erase(it);
  threads_[tid].generation = next;
}

void BlockPairer::loss_begins(uint64_t time) {
  ++losses_;
  for (auto& [tid, t] : threads_) {
    if (t.blocked && t.block_ts <= time) {
      ++counters_.ringbuf_drops;
      counters_.ringbuf_drops_ns += time - t.block_ts;
      t.blocked = false;
    }
    t.woken = t.wake_on_cpu = false;
    t.running_on = -1;
  }
  cpu_current_.clear();
}

void BlockPairer::loss_ends() {
  losses_ -= losses_ > 0;
  cpu_current_.clear();  // the lost switches of its CPU
}

void BlockPairer::add(const SchedEvent& e) {
  if (e.kind == SchedKind::kWaking) {
    waking(e);
    return;
  }
  // The CPU switches away from a task it was not seen to switch to: the kernel gave no event
  // for a switch (on this kind of VM, mostly out of the idle task). Counted, as the BPF
  // programs count the switches they were not run for: a block of that task may end late.
  if (auto it = cpu_current_.find(e.cpu); opt_.every_switch && it != cpu_current_.end() && it->second != e.prev_tid)
    ++counters_.untraced_switches;
  // Idle (tid 0) neither blocks nor is woken.
  if (e.prev_tid) switch_out(e);
  if (e.next_tid) switch_in(e);
  cpu_current_[e.cpu] = e.next_tid;
}

void BlockPairer::switch_out(const SchedEvent& e) {
  Thread& t = thread(e.prev_tid);
  t.tgid = e.pid ? e.pid : t.tgid;
  t.comm = e.prev_comm;
  t.running_on = -1;
  if (t.blocked) end_late(e.prev_tid, t, e.time, e.cpu);
  const uint32_t state = offwake_block_state(e.prev_state);  // as the BPF programs reduce theirs
  const bool blocks = state && offwake_state_wanted(state, opt_.state_mask) && wanted(e.prev_tid, t);
  // Only a wakeup that came on the way in belongs to the block starting now.
  if (!blocks || !t.wake_on_cpu) t.woken = t.wake_on_cpu = false;
  if (!blocks) return;
  if (losses_) {  // its end may be lost: dropped (loss_begins)
    ++counters_.ringbuf_drops;
    t.woken = t.wake_on_cpu = false;
    return;
  }
  t.state = state;
  t.cgroup = e.cgroup;
  const uint32_t draw = opt_.sample_period_ns ? static_cast<uint32_t>(random_()) : 0;  // 32 bits, as the BPF side's
  t.keep_ns = offwake_keep_threshold(opt_.min_block_ns, opt_.sample_period_ns, draw);
  t.user = kernel_thread(e.prev_tid) ? kNoStack : 0;
  split(e, true, t.kern, t.user);
  t.block_ts = e.time;
  t.blocked = true;
}

// It ran with a block still open: its switch-in was not seen. The block ended at its wakeup
// if there was one, else `now` (an upper bound); its stacks were taken at its switch-out.
void BlockPairer::end_late(uint32_t tid, Thread& t, uint64_t now, uint32_t cpu) {
  ++counters_.late_ends;
  const bool own = owns_wakeup(t, true);
  end_block(tid, t, offwake_late_block_end(own, t.wake_ts, t.block_ts, now), cpu, own, OFFWAKE_WAKER_NONE);
  // Used up; a wakeup that is not this block's stays for the block starting now.
  if (own) t.woken = t.wake_on_cpu = false;
}

bool BlockPairer::owns_wakeup(const Thread& t, bool ran_since) {
  return offwake_wakeup_of_block(t.woken, t.wake_on_cpu, t.wake_ts, t.block_ts, ran_since);
}

void BlockPairer::switch_in(const SchedEvent& e) {
  Thread& t = thread(e.next_tid);
  t.running_on = static_cast<int>(e.cpu);
  if (t.comm.empty()) t.comm = e.next_comm;
  if (!t.blocked) {
    t.woken = t.wake_on_cpu = false;  // a wakeup of a block not seen to start is used up
    return;
  }
  const bool own = owns_wakeup(t, false);
  end_block(e.next_tid, t, std::max(e.time, t.block_ts), e.cpu, own, OFFWAKE_WAKER_NONE);
  t.woken = t.wake_on_cpu = false;
}

void BlockPairer::waking(const SchedEvent& e) {
  auto it = threads_.find(e.target_tid);
  if (it == threads_.end()) return;  // never seen: not a block we track
  Thread& t = it->second;
  const bool on_cpu = !t.blocked && t.running_on >= 0;
  // A wakeup on the way into the scheduler belongs to the block that starts there, if the
  // filters keep it (a thread not yet seen to switch out may be kept): only then is the
  // waker's stack completed.
  const bool may_keep = t.blocked || t.tgid == 0 || wanted(e.target_tid, t);
  if (!offwake_wakeup_may_end_block(t.blocked, on_cpu)) {
    ++counters_.runnable_wakeups;  // runnable (or in a block not recorded): ends nothing
    return;
  }
  t.woken = true;
  t.wake_on_cpu = on_cpu;
  t.wake_ts = e.time;
  const uint32_t irq = e.irq == OFFWAKE_WAKER_SOFTIRQ && softirq_is_tasks(e) ? OFFWAKE_WAKER_OWN_SOFTIRQ : e.irq;
  if (irq & OFFWAKE_WAKER_IRQ_MASK) {
    // The interrupted task did not wake anyone: name the context, not the task.
    t.waker_flags = irq;
    t.waker_tgid = t.waker_tid = 0;
    t.waker_ident = 0;
    t.waker_cgroup = 0;
    char comm[OFFWAKE_COMM_LEN];
    offwake_irq_waker_comm(irq, comm);
    t.waker_comm = comm;
    t.waker_user = kNoStack;
    split(e, false, t.waker_kern, t.waker_user);
    ++counters_.irq_wakeups;
  } else {
    Thread& w = thread(e.tid);
    if (e.pid) w.tgid = e.pid;
    t.waker_tgid = e.pid;
    t.waker_tid = e.tid;
    t.waker_ident = ident(e.tid, w.generation);
    t.waker_cgroup = e.cgroup;
    t.waker_comm = w.comm;
    t.waker_flags = irq;  // 0 or OWN_SOFTIRQ
    t.waker_user = 0;
    if (kernel_thread(e.tid)) {
      t.waker_flags = OFFWAKE_WAKER_KTHREAD;
      t.waker_user = kNoStack;
    }
    split(e, false, t.waker_kern, t.waker_user, may_keep);
  }
  ++counters_.wakeups;
}

// A wakeup in a softirq: whether the task ran it (offwake_softirq_is_tasks), with no
// interrupt's entry in its kernel callchain.
bool BlockPairer::softirq_is_tasks(const SchedEvent& e) const {
  if (!opt_.is_interrupt_entry) return false;
  const auto& frames = e.callchain.frames();
  const bool interrupt_below = std::any_of(frames.begin(), frames.end(), [&](const Frame& f) {
    return f.context == FrameContext::kKernel && opt_.is_interrupt_entry(f.ip);
  });
  return offwake_softirq_is_tasks(interrupt_below, kernel_thread(e.tid));
}

bool BlockPairer::kept(const Thread& t, uint64_t delta) {
  if (offwake_duration_kept(delta, t.keep_ns, opt_.max_block_ns)) return true;
  if (opt_.sample_period_ns && offwake_duration_kept(delta, opt_.min_block_ns, opt_.max_block_ns))
    ++counters_.sample_dropped;
  else
    ++counters_.filtered;
  return false;
}

void BlockPairer::end_block(uint32_t tid, Thread& t, uint64_t end, uint32_t cpu, bool with_waker, uint32_t no_waker) {
  const uint64_t start = t.block_ts;
  const uint64_t delta = end - start;
  t.blocked = false;
  if (!kept(t, delta)) return;
  offwake_key k;
  std::memset(&k, 0, sizeof k);
  k.tgid = t.tgid;
  k.tid = tid;
  k.kern_stack_id = t.kern;
  k.user_stack_id = t.user;
  k.state = t.state;
  k.ident = ident(tid, t.generation);
  k.cgroup_id = t.cgroup;
  copy_comm(k.comm, t.comm);
  uint64_t stamp = start;
  if (with_waker) {
    k.waker_flags = t.waker_flags;
    k.waker_tgid = t.waker_tgid;
    k.waker_tid = t.waker_tid;
    k.waker_ident = t.waker_ident;
    k.waker_cgroup_id = t.waker_cgroup;
    k.waker_kern_stack_id = t.waker_kern;
    k.waker_user_stack_id = t.waker_user;
    copy_comm(k.waker_comm, t.waker_comm);
    stamp = t.wake_ts;
  } else {
    k.waker_flags = no_waker;
    k.waker_kern_stack_id = k.waker_user_stack_id = OFFWAKE_NO_STACK;
    if (no_waker == OFFWAKE_WAKER_NONE) ++counters_.missed_wakeups;
  }
  ++counters_.blocks;
  const bool weighs_period = delta < opt_.sample_period_ns;
  if (weighs_period) ++counters_.sample_weighted;
  if (opt_.timeline) {
    offwake_event ev;
    std::memset(&ev, 0, sizeof ev);
    ev.start_ns = start;
    ev.end_ns = end;
    ev.stamp_ns = stamp;
    ev.cpu = cpu;
    ev.flags = weighs_period ? OFFWAKE_EVENT_SAMPLED : 0;
    ev.key = k;
    opt_.timeline(ev);
    return;
  }
  std::string bytes(reinterpret_cast<const char*>(&k), OFFWAKE_KEY_BASE_SIZE);
  auto [it, added] = index_.try_emplace(std::move(bytes), aggregates_.size());
  if (added) {
    Aggregate a;
    std::memset(&a, 0, sizeof a);
    a.key = k;
    aggregates_.push_back(a);
  }
  offwake_value& v = aggregates_[it->second].value;
  v.total_ns += opt_.sample_period_ns ? offwake_block_weight(delta, opt_.sample_period_ns) : delta;
  ++v.count;
  if (weighs_period) {
    ++v.sampled;
    v.sampled_ns += delta;
  }
  v.max_ns = std::max<uint64_t>(v.max_ns, delta);
  v.last_ns = std::max<uint64_t>(v.last_ns, stamp);
}

void BlockPairer::finish(uint64_t stop) {
  for (auto& [tid, t] : threads_) {
    if (!t.blocked || t.block_ts > stop) continue;
    const uint64_t so_far = stop - t.block_ts;
    if (!kept(t, so_far)) {
      ++counters_.still_blocked_filtered;
      t.blocked = false;
      continue;
    }
    ++counters_.still_blocked;
    const bool own = owns_wakeup(t, false);
    end_block(tid, t, stop, 0, own, OFFWAKE_WAKER_STILL_BLOCKED);
  }
}

}  // namespace offwake::sched
