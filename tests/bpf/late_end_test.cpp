// The rules for a block whose switch-in was never traced (a late end), driven through the
// real programs: the test writes a task's BPF task storage from user space (key: a pidfd) as
// if such a block were open, then lets the task block for real, so that the programs end the
// crafted block at the task's next switch-out.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>

#include <sched.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "bpf/offwake_loader.h"
#include "support/run.h"
#include "util/fd.h"

namespace offwake::bpf {
namespace {

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

// How long the test waits for the child to reach a state (it takes microseconds to
// milliseconds; the bound is for a host that takes the virtual CPU away) and how often it looks.
constexpr auto kChildTimeout = std::chrono::seconds(5);
constexpr auto kChildPoll = std::chrono::milliseconds(1);

// A child that waits for start(), runs on the CPU until stop_spinning(), then blocks reading
// a pipe until released.
class SpinThenBlock {
 public:
  SpinThenBlock() {
    int go[2], spinning[2], stop[2], done[2];
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(spinning, O_CLOEXEC) != 0 || pipe2(stop, O_CLOEXEC | O_NONBLOCK) != 0 ||
        pipe2(done, O_CLOEXEC) != 0)
      return;
    pid_ = fork();
    if (pid_ == 0) {
      char c;
      if (read(go[0], &c, 1) != 1) _exit(2);
      if (write(spinning[1], "x", 1) != 1) _exit(3);  // on the CPU from here until stopped
      while (read(stop[0], &c, 1) != 1) {  // non-blocking: spins on the CPU
      }
      _exit(read(done[0], &c, 1) == 1 ? 0 : 1);
    }
    close(go[0]);
    close(spinning[1]);
    close(stop[0]);
    close(done[0]);
    start_.reset(go[1]);
    spinning_.reset(spinning[0]);
    stop_.reset(stop[1]);
    release_.reset(done[1]);
  }
  ~SpinThenBlock() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // Returns once the child is spinning: on a CPU, not blocked, until told to stop.
  bool start() {
    if (write(start_.get(), "x", 1) != 1) return false;
    pollfd p{spinning_.get(), POLLIN, 0};
    char c;
    const int timeout_ms = static_cast<int>(std::chrono::milliseconds(kChildTimeout).count());
    return poll(&p, 1, timeout_ms) == 1 && read(spinning_.get(), &c, 1) == 1;
  }
  bool stop_spinning() { return write(stop_.get(), "x", 1) == 1; }
  // Waits until the child is blocked: off its run queue (/proc/PID/wchan names where it
  // sleeps; "0" while it runs or is runnable). A wakeup from then on waits until the child is
  // off the CPU (try_to_wake_up waits for on_cpu), so its switch-out has been traced.
  bool wait_until_blocked() const {
    const std::string wchan = "/proc/" + std::to_string(pid_) + "/wchan";
    const auto deadline = std::chrono::steady_clock::now() + kChildTimeout;
    do {
      const std::string w = test::read_file(wchan);
      if (!w.empty() && w != "0") return true;
      std::this_thread::sleep_for(kChildPoll);
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }
  int release_and_wait() {
    int status = -1;
    if (write(release_.get(), "x", 1) != 1) return -1;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  UniqueFd start_, spinning_, stop_, release_;
};

// S with TASK_WAKEKILL: a state the child's own blocks (plain S, in read()) never have, so
// the crafted block's aggregate is the one with this state.
constexpr uint32_t kCraftedState = OFFWAKE_STATE_INTERRUPTIBLE | 0x100;

struct Outcome {
  std::vector<Aggregate> crafted;  // the aggregates of the crafted block (its state)
  offwake_counters counters{};
};

// How many times the kernel has switched `pid` in: sched_info.pcount, the third field of
// /proc/PID/schedstat, counted at every arrival on a CPU after being queued (woken, or
// preempted and still runnable, or moved to another CPU's queue). 0 if it cannot be read.
uint64_t switch_ins(pid_t pid) {
  std::istringstream in(test::read_file("/proc/" + std::to_string(pid) + "/schedstat"));
  uint64_t run_ns = 0, wait_ns = 0, count = 0;
  in >> run_ns >> wait_ns >> count;
  return count;
}

// The CPUs this thread may run on, and a guard that pins it to `cpus` until it goes.
class PinThisThread {
 public:
  explicit PinThisThread(const cpu_set_t& cpus) {
    ok_ = sched_getaffinity(0, sizeof saved_, &saved_) == 0 && sched_setaffinity(0, sizeof cpus, &cpus) == 0;
  }
  ~PinThisThread() {
    if (ok_) sched_setaffinity(0, sizeof saved_, &saved_);
  }
  bool ok() const { return ok_; }

 private:
  cpu_set_t saved_{};
  bool ok_ = false;
};

// The counters that changed from `before` to `after` (every field is a __u64 count).
offwake_counters counted_since(const offwake_counters& before, const offwake_counters& after) {
  static_assert(sizeof(offwake_counters) % sizeof(uint64_t) == 0);
  constexpr size_t n = sizeof(offwake_counters) / sizeof(uint64_t);
  uint64_t b[n], a[n], d[n];
  std::memcpy(b, &before, sizeof b);
  std::memcpy(a, &after, sizeof a);
  for (size_t i = 0; i < n; ++i) d[i] = a[i] - b[i];
  offwake_counters out;
  std::memcpy(&out, d, sizeof out);
  return out;
}

// One run under the loaded programs: a SpinThenBlock child is given the state `make(now)`
// makes while it spins. The crafted state says the child is on a CPU until its read() blocks:
// its next traced switch must be that switch-out, where the programs find the crafted block
// open and end it late. If the child is anywhere else when the state is written, preempted or
// being moved to another CPU, and so runnable but off the CPU, its next switch is a switch-in,
// which ends any open block as an ordinary one, taking its waker as its own: not the case
// under test (a full run beside a benchmark saw the crafted block end with the crafted waker).
// A SCHED_FIFO child alone on a CPU, with this thread on the others, is seldom disturbed, but
// on a loaded machine it can be. `*undisturbed` says whether the kernel switched the child in
// between the moment it was seen spinning (before the state is written) and its block: only
// then does the outcome say anything.
void run_once(OffwakeBpf& bpf, const cpu_set_t& child_cpu,
              const std::function<offwake_task_block(uint64_t now)>& make, Outcome* out, bool* undisturbed) {
  SpinThenBlock child;
  ASSERT_GT(child.pid(), 0);
  ASSERT_EQ(sched_setaffinity(child.pid(), sizeof child_cpu, &child_cpu), 0) << strerror(errno);
  sched_param fifo{};
  fifo.sched_priority = 1;
  ASSERT_EQ(sched_setscheduler(child.pid(), SCHED_FIFO, &fifo), 0) << strerror(errno);
  ASSERT_TRUE(bpf.add_target_tgid(static_cast<uint32_t>(child.pid())).ok());
  auto before = bpf.read_counters();
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(child.start()) << "the child did not start spinning";
  const uint64_t ins_spinning = switch_ins(child.pid());
  ASSERT_GT(ins_spinning, 0u) << "no /proc/" << child.pid() << "/schedstat";
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, child.pid(), 0)));
  ASSERT_TRUE(pidfd.valid());
  int key = pidfd.get();
  offwake_task_block state = make(monotonic_ns());
  ASSERT_EQ(bpf_map_update_elem(bpf.task_blocks_fd(), &key, &state, BPF_ANY), 0) << strerror(errno);
  ASSERT_TRUE(child.stop_spinning());
  // It blocks in read(): its switch-out ends the crafted block.
  ASSERT_TRUE(child.wait_until_blocked()) << "the child did not block";
  // The child ran from before the state was written until it blocked (it saw the stop), and
  // was never switched in meanwhile: so it was on its CPU all along.
  *undisturbed = switch_ins(child.pid()) == ins_spinning;
  const uint32_t tid = static_cast<uint32_t>(child.pid());
  int status = child.release_and_wait();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto aggs = bpf.read_aggregates();
  ASSERT_TRUE(aggs.ok());
  for (const Aggregate& a : *aggs)
    if (a.key.tid == tid && a.key.state == kCraftedState) out->crafted.push_back(a);
  auto after = bpf.read_counters();
  ASSERT_TRUE(after.ok());
  out->counters = counted_since(*before, *after);
}

// Runs children until one is undisturbed (see run_once), under programs loaded once (loading
// them takes up to a minute on a loaded machine). Each disturbed run is said.
constexpr int kAttempts = 20;
void run_with_state(const std::function<offwake_task_block(uint64_t now)>& make, Outcome* out) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0) << strerror(errno);
  ASSERT_GE(CPU_COUNT(&allowed), 2) << "the spinning child needs a CPU of its own";
  int last = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) last = cpu;
  cpu_set_t child_cpu, others = allowed;
  CPU_ZERO(&child_cpu);
  CPU_SET(last, &child_cpu);
  CPU_CLR(last, &others);
  PinThisThread pin(others);  // a spinning SCHED_FIFO child on our CPU would keep us off it
  ASSERT_TRUE(pin.ok()) << strerror(errno);

  LoaderOptions o;
  o.tgids = {0x7ffffff0u};  // no such process: a filter that only the children added to it pass
  auto bpf = OffwakeBpf::load(o);
  ASSERT_TRUE(bpf.ok()) << bpf.error().message();
  ASSERT_TRUE(bpf->attach().ok());
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    Outcome run;
    bool undisturbed = false;
    ASSERT_NO_FATAL_FAILURE(run_once(*bpf, child_cpu, make, &run, &undisturbed));
    if (undisturbed) {
      *out = std::move(run);
      bpf->detach();
      return;
    }
    std::cerr << "run " << attempt << ": the child was switched in again between the state and its block; again\n";
  }
  FAIL() << "the child was switched in again between the crafted state and its block in all " << kAttempts
         << " runs";
}

offwake_task_block open_block(uint64_t block_ts) {
  offwake_task_block b{};
  b.block_ts = block_ts;
  b.state = kCraftedState;
  b.kern_stack_id = OFFWAKE_NO_STACK;
  b.user_stack_id = OFFWAKE_NO_STACK;
  b.waker_tgid = b.waker_tid = 4242;
  std::strcpy(b.waker_comm, "crafted-waker");
  b.waker_kern_stack_id = b.waker_user_stack_id = OFFWAKE_NO_STACK;
  return b;
}

// A wakeup recorded during the open block ended it: the late end is dated at that wakeup,
// to the nanosecond, and names that waker.
TEST(LateEnd, IsDatedAtItsOwnWakeupAndNamesItsWaker) {
  uint64_t start = 0;
  Outcome out;
  ASSERT_NO_FATAL_FAILURE(run_with_state(
      [&](uint64_t now) {
        start = now - 10'000'000;
        offwake_task_block b = open_block(start);
        b.wake_flags = OFFWAKE_TB_WAKER;
        b.wake_ts = start + 5'000'000;
        return b;
      },
      &out));
  ASSERT_EQ(out.crafted.size(), 1u);
  const Aggregate& a = out.crafted[0];
  EXPECT_EQ(a.value.count, 1u);
  EXPECT_EQ(a.value.total_ns, 5'000'000u);
  EXPECT_EQ(a.value.last_ns, start + 5'000'000);
  EXPECT_EQ(a.key.waker_tid, 4242u);
  EXPECT_EQ(comm_string(a.key.waker_comm), "crafted-waker");
  EXPECT_EQ(a.key.kern_stack_id, -OFFWAKE_ERR_NOT_TRACED);  // its kernel stack is gone
  EXPECT_GE(out.counters.late_ends, 1u);
}

// A wakeup that came while the task was already on a CPU again (on its way into the next
// block) is not the waker of the block whose switch-in was missed: that one ends without a
// waker, counted, never with the next block's waker (issue: stale waker on a late end).
TEST(LateEnd, NeverTakesTheWakerOfTheNextBlock) {
  Outcome out;
  ASSERT_NO_FATAL_FAILURE(run_with_state(
      [](uint64_t now) {
        offwake_task_block b = open_block(now - 10'000'000);
        b.wake_flags = OFFWAKE_TB_WAKER | OFFWAKE_TB_WAKE_ON_CPU;
        b.wake_ts = now - 1'000'000;
        return b;
      },
      &out));
  ASSERT_EQ(out.crafted.size(), 1u);
  const Aggregate& a = out.crafted[0];
  EXPECT_EQ(a.key.waker_flags, OFFWAKE_WAKER_NONE);
  EXPECT_EQ(a.key.waker_tid, 0u);
  EXPECT_GT(a.value.total_ns, 9'000'000u);  // ended when the task was seen running, not at that wakeup
  EXPECT_GE(out.counters.missed_wakeups, 1u);
}

// A wakeup on the way into the open block (the task was still on a CPU, before its
// switch-out) is that block's, as at a traced switch-in: the late end names it, at the
// block's start (the task never slept), rather than leaving it to the next block.
TEST(LateEnd, TakesTheWakeupThatCameOnTheWayIntoTheBlock) {
  Outcome out;
  ASSERT_NO_FATAL_FAILURE(run_with_state(
      [](uint64_t now) {
        offwake_task_block b = open_block(now - 10'000'000);
        b.wake_flags = OFFWAKE_TB_WAKER | OFFWAKE_TB_WAKE_ON_CPU;
        b.wake_ts = now - 11'000'000;
        return b;
      },
      &out));
  ASSERT_EQ(out.crafted.size(), 1u);
  const Aggregate& a = out.crafted[0];
  EXPECT_EQ(a.key.waker_tid, 4242u);
  EXPECT_EQ(comm_string(a.key.waker_comm), "crafted-waker");
  EXPECT_EQ(a.value.total_ns, 0u);
}

// A wakeup older than the open block (left over from before it) is not its waker either.
TEST(LateEnd, IgnoresAWakeupOlderThanTheBlock) {
  Outcome out;
  ASSERT_NO_FATAL_FAILURE(run_with_state(
      [](uint64_t now) {
        offwake_task_block b = open_block(now - 10'000'000);
        b.wake_flags = OFFWAKE_TB_WAKER;
        b.wake_ts = now - 11'000'000;
        return b;
      },
      &out));
  ASSERT_EQ(out.crafted.size(), 1u);
  EXPECT_EQ(out.crafted[0].key.waker_flags, OFFWAKE_WAKER_NONE);
  EXPECT_EQ(out.crafted[0].key.waker_tid, 0u);
}

// A switch the kernel ran no BPF program for (on this VM, the init process's threads are
// invisible to BPF) shows as a CPU leaving a task it was never seen switching to. The test
// makes every CPU's last seen task one that does not exist: each CPU's next switch is counted.
TEST(UntracedSwitches, AreCountedWhenACpuLeavesATaskNeverSeenArriving) {
  LoaderOptions o;
  o.tids = {static_cast<uint32_t>(getpid())};  // record nothing else
  auto bpf = OffwakeBpf::load(o);
  ASSERT_TRUE(bpf.ok()) << bpf.error().message();
  ASSERT_TRUE(bpf->attach().ok());
  usleep(100'000);  // a pause after attaching; the count does not depend on it (before is subtracted)
  auto before = bpf->read_counters();
  ASSERT_TRUE(before.ok());
  const int ncpus = libbpf_num_possible_cpus();
  ASSERT_GT(ncpus, 0);
  // Per-CPU values are laid out 8 bytes apart: a u32 each, in a u64 slot.
  std::vector<uint64_t> bogus(static_cast<size_t>(ncpus), 0x7ffffff0u);  // no such tid
  uint32_t zero = 0;
  ASSERT_EQ(bpf_map_update_elem(bpf->cpu_current_fd(), &zero, bogus.data(), BPF_ANY), 0) << strerror(errno);
  // Make every online CPU switch: a short process pinned to each.
  const long online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
  for (long cpu = 0; cpu < online_cpus; ++cpu)
    ASSERT_EQ(system(("taskset -c " + std::to_string(cpu) + " /bin/true").c_str()), 0);
  // A margin: each CPU's counted switch came when the pinned process first ran there, before
  // system() returned.
  usleep(20'000);
  auto after = bpf->read_counters();
  ASSERT_TRUE(after.ok());
  bpf->detach();
  EXPECT_GE(after->untraced_switches - before->untraced_switches, static_cast<uint64_t>(online_cpus));
}

}  // namespace
}  // namespace offwake::bpf
