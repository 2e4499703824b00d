#include "bpf/offwake_loader.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "block_rules.h"
#include "bpf/libbpf_log.h"
#include "util/fd.h"

namespace offwake::bpf::skel {
#include "offwake.skel.h"
}  // namespace offwake::bpf::skel

namespace offwake::bpf {
namespace {

// CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns().
uint64_t monotonic_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// errno of a libbpf call in 1.x mode: negative return value, errno also set.
int libbpf_errno(long ret) { return ret < 0 ? static_cast<int>(-ret) : errno; }

// Whether libbpf's log holds the verifier's refusal of a program: it fails the load with
// EACCES too, which then says nothing of privilege.
bool verifier_refused(const std::string& log) { return !verifier_refusal(log).empty(); }

bool permission_denied(const Error& e, const std::string& log) {
  return (e.errnum() == EPERM || e.errnum() == EACCES) && !verifier_refused(log);
}

// Appends what libbpf said (e.g. the verifier log) after the error's own message. The
// result carries no errno: its text already ends with the log. The kind stays.
// A permission error stays one line: the log would only repeat it.
Error with_log(const Error& e, const LibbpfLogCapture& log) {
  std::string text = log.text();
  if (text.empty() || permission_denied(e, text)) return e;
  return Error(e.message() + "\nlibbpf log:\n" + text, 0, e.kind());
}

// Without the privilege, no BPF: this machine's limit for this user, whatever was being done.
Error permission_hint(Error e, const LibbpfLogCapture& log) {
  if (!permission_denied(e, log.text())) return e;
  return Error::unavailable(e.what() + " (perf offwake needs root, or CAP_BPF and CAP_PERFMON)", e.errnum());
}

bool cfg_unwind_tables(const LoaderOptions& o) { return o.unwind_tables && !o.kernel_user_walker; }
// Processes outside the targets that can ask for tables at once (unwind_wanted): the
// targets' wakers elsewhere. More ask in vain, counted (unwind_requests_full).
constexpr uint32_t kUnwindRequests = 4096;
// Only some processes have tables from the start (-p, -t, a command): the others ask.
bool cfg_unwind_on_request(const LoaderOptions& o) { return cfg_unwind_tables(o) && (!o.tgids.empty() || !o.tids.empty()); }

bool lazy_capture(const LoaderOptions& o) {
  return offwake_lazy_capture(o.eager, o.min_block_ns, o.max_block_ns, o.sample_period_ns);
}

// Exactly, system-wide or recording a followed command, a process that execs has its first
// blocks' user stacks wait for its unwind tables (cfg.user_await_tables,
// bpf-progs/deferred_user.bpf.h), on rseq_update; not with eager (every stack at once), nor
// for -p and -t, whose processes have their tables before the recording starts.
bool awaits_tables(const LoaderOptions& o) {
  return !o.eager && !lazy_capture(o) && cfg_unwind_tables(o) && (o.follow_forks || o.tgids.empty());
}

// Whether deferred user stacks wait for sys_exit: lazily, without task work, and either
// without rseq_update or when asked (sys_exit_user_stacks). With rseq_update alone, the few
// threads without rseq have their user stacks walked at switch-out: cheaper than a program on
// every system call of the machine.
bool use_sys_exit(const LoaderOptions& o, bool task_work, bool rseq) {
  return lazy_capture(o) && !task_work && (!rseq || o.sys_exit_user_stacks);
}

// Distances from this CPU's runqueue (current->se.cfs_rq->rq) to other static per-CPU
// variables, from the kernel's BTF (DATASEC .data..percpu): what the programs read where a
// __ksym would not load without CONFIG_KALLSYMS_ALL (irq.bpf.h).
struct PercpuFromRunqueue {
  std::optional<int64_t> preempt_count;  // __preempt_count (x86)
  std::optional<int64_t> irq_stack_ptr;  // hardirq_stack_ptr (x86-64, Linux 6.15+)
};

PercpuFromRunqueue percpu_from_runqueue(const struct btf* vmlinux) {
  if (!vmlinux) return {};
  int id = btf__find_by_name_kind(vmlinux, ".data..percpu", BTF_KIND_DATASEC);
  if (id < 0) return {};
  const struct btf_type* sec = btf__type_by_id(vmlinux, id);
  std::optional<int64_t> rq, pc, irq_stack;
  const struct btf_var_secinfo* v = btf_var_secinfos(sec);
  for (int i = 0; i < btf_vlen(sec); ++i, ++v) {
    const struct btf_type* var = btf__type_by_id(vmlinux, v->type);
    const char* name = var ? btf__name_by_offset(vmlinux, var->name_off) : nullptr;
    if (!name) continue;
    if (std::strcmp(name, "runqueues") == 0) rq = v->offset;
    if (std::strcmp(name, "__preempt_count") == 0) pc = v->offset;
    if (std::strcmp(name, "hardirq_stack_ptr") == 0) irq_stack = v->offset;
  }
  if (!rq) return {};
  PercpuFromRunqueue d;
  if (pc) d.preempt_count = *pc - *rq;
  if (irq_stack) d.irq_stack_ptr = *irq_stack - *rq;
  return d;
}

void configure(skel::offwake* s, const LoaderOptions& o, uint32_t depth, const PercpuFromRunqueue& percpu,
               bool task_work, bool rseq) {
  offwake_config& cfg = s->rodata->cfg;
  cfg.min_block_ns = o.min_block_ns;
  cfg.max_block_ns = o.max_block_ns;
  cfg.sample_period_ns = o.sample_period_ns;
  cfg.state_mask = o.state_mask;
  cfg.filter_tids = !o.tids.empty();
  cfg.filter_tgids = !o.tgids.empty();
  cfg.filter_cgroup = !o.cgroup_path.empty();
  cfg.user_threads_only = o.user_threads_only;
  cfg.kernel_threads_only = o.kernel_threads_only;
  cfg.follow_forks = o.follow_forks;
  cfg.kernel_stack_skip = o.kernel_stack_skip;
  cfg.timeline = o.timeline;
  cfg.eager = o.eager;
  cfg.kernel_user_walker = o.kernel_user_walker;
  cfg.unwind_tables = cfg_unwind_tables(o);
  cfg.unwind_on_request = cfg_unwind_on_request(o);
  cfg.sched_frames = o.sched_frames;
  cfg.check_replays = o.check_replays;
  cfg.user_task_work = task_work;
  cfg.user_rseq = rseq;
  cfg.user_await_tables = rseq && awaits_tables(o);
  cfg.user_sys_exit = use_sys_exit(o, task_work, rseq);
  cfg.user_stack_limit = o.user_stack_limit;
  cfg.irq_detect = percpu.preempt_count.has_value();
  cfg.preempt_count_from_rq = percpu.preempt_count.value_or(0);
  cfg.irq_stack_ptr_from_rq = percpu.irq_stack_ptr.value_or(0);
  cfg.stack_depth = depth;
  cfg.chain_depth = o.chain_depth;
  s->rodata->switch_windows = o.switch_windows && !o.timeline;
}


// The kernel's BTF (null if it cannot be loaded). A load parses all of it, about 8 ms here:
// a caller that asks several questions loads it once.
using VmlinuxBtf = std::unique_ptr<struct btf, void (*)(struct btf*)>;
VmlinuxBtf load_vmlinux_btf() { return VmlinuxBtf(btf__load_vmlinux_btf(), btf__free); }

bool btf_has(const struct btf* vmlinux, const char* name, int kind) {
  return vmlinux && btf__find_by_name_kind(vmlinux, name, kind) >= 0;
}

bool has_task_work(const struct btf* vmlinux) {
  return btf_has(vmlinux, "bpf_task_work_schedule_resume_impl", BTF_KIND_FUNC);
}

bool has_rseq_update(const struct btf* vmlinux) { return btf_has(vmlinux, "btf_trace_rseq_update", BTF_KIND_TYPEDEF); }

bool use_task_work(const LoaderOptions& o, const struct btf* vmlinux) {
  return lazy_capture(o) && !o.kernel_user_walker && !o.sys_exit_user_stacks && has_task_work(vmlinux);
}

bool use_rseq(const LoaderOptions& o, const struct btf* vmlinux) {
  return (lazy_capture(o) || awaits_tables(o)) && o.rseq_user_stacks && has_rseq_update(vmlinux);
}

}  // namespace

void OffwakeBpf::SkelDeleter::operator()(skel::offwake* s) const { skel::offwake__destroy(s); }

bool kernel_has_task_work() { return has_task_work(load_vmlinux_btf().get()); }

bool kernel_has_rseq_update() { return has_rseq_update(load_vmlinux_btf().get()); }

Result<uint32_t> perf_event_max_stack() {
  std::ifstream in("/proc/sys/kernel/perf_event_max_stack");
  uint32_t v = 0;
  if (!(in >> v) || v == 0) return Error("reading /proc/sys/kernel/perf_event_max_stack", EIO, ErrorKind::kIo);
  return v;
}

Status probe_kernel_support() {
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return Error::from_errno("opening /sys/kernel/btf/vmlinux (kernel BTF, CONFIG_DEBUG_INFO_BTF)",
                             ErrorKind::kUnavailable);
  VmlinuxBtf btf = load_vmlinux_btf();
  if (!btf) return Error::from_errno("loading kernel BTF", ErrorKind::kUnavailable);
  const struct btf* vmlinux = btf.get();

  // tp_btf/sched_switch: typedef -> pointer -> prototype (void *, preempt, prev, next, prev_state).
  int id = btf__find_by_name_kind(vmlinux, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
  if (id < 0) return Error::unavailable("kernel BTF has no sched_switch tracepoint (btf_trace_sched_switch)", ENOENT);
  const struct btf_type* t = btf__type_by_id(vmlinux, id);
  while (t && (btf_is_typedef(t) || btf_is_ptr(t))) t = btf__type_by_id(vmlinux, t->type);
  if (!t || !btf_is_func_proto(t)) return Error::unavailable("btf_trace_sched_switch is not a function pointer");
  if (btf_vlen(t) < 5)
    return Error::unavailable("this kernel's sched_switch tracepoint has no prev_state argument (needs Linux 5.18+)");
  return ok_status();
}

// Opens, configures and loads the programs: the skeleton, or why not (the machine's failures
// ErrorKind::kUnavailable).
Result<OffwakeBpf::SkelPtr> open_and_load(const LoaderOptions& o, uint32_t depth, const PercpuFromRunqueue& percpu,
                                          bool task_work, bool rseq) {
  auto machine = [](const Error& e) { return e.with_kind(ErrorKind::kUnavailable); };
  const uint32_t page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  LibbpfLogCapture log;

  // Open.
  OffwakeBpf::SkelPtr s(skel::offwake__open());
  if (!s) return machine(with_log(permission_hint(Error::from_errno("opening BPF object"), log), log));

  // Configure: rodata, map sizes, which programs load.
  configure(s.get(), o, depth, percpu, task_work, rseq);
  struct {
    bpf_map* map;
    uint32_t entries;
    const char* what;
  } sizes[] = {
      {s->maps.stack_traces, o.stack_map_entries, "stack map"},
      {s->maps.stack_store, o.stack_store_entries ? o.stack_store_entries : o.stack_map_entries, "stack store"},
      {s->maps.aggregates, o.aggregate_entries, "aggregation map"},
      // Written only with --switch-output: otherwise the smallest a map can be.
      {s->maps.aggregates_next, o.switch_windows && !o.timeline ? o.aggregate_entries : 1, "aggregation map"},
      {s->maps.target_tgids, o.max_tgids ? o.max_tgids : 1, "target process map"},
      {s->maps.target_tids, o.tids.empty() ? 1 : static_cast<uint32_t>(o.tids.size()), "target thread map"},
      {s->maps.user_works, task_work ? o.user_work_entries : 1, "task work map"},
      // Never written in aggregated mode: the smallest size a ring buffer can have.
      {s->maps.events, o.timeline ? o.ringbuf_bytes : page, "timeline ring buffer"},
      {s->maps.unwind_rows, o.unwind_tables ? o.unwind_rows : 1, "unwind table memory"},
      {s->maps.unwind_processes, o.unwind_tables ? o.unwind_processes : 1, "unwind process map"},
      {s->maps.unwind_cache, o.unwind_tables ? bpf_map__max_entries(s->maps.unwind_cache) : 1, "unwind rule cache"},
      {s->maps.unwind_wanted, cfg_unwind_on_request(o) ? kUnwindRequests : 1, "unwind request map"},
  };
  for (const auto& m : sizes) {
    if (m.entries == 0) return Error::usage(std::string(m.what) + " needs at least one entry", EINVAL);
    if (int err = bpf_map__set_max_entries(m.map, m.entries))
      return Error(std::string("sizing ") + m.what, libbpf_errno(err));
  }
  for (bpf_map* m : {s->maps.aggregates, s->maps.aggregates_next})
    if (int err = bpf_map__set_key_size(m, OFFWAKE_KEY_SIZE(o.chain_depth)))
      return Error("setting the aggregation key size", libbpf_errno(err));
  if (int err = bpf_map__set_value_size(s->maps.stack_traces, depth * sizeof(uint64_t)))
    return Error("setting stack depth", libbpf_errno(err));
  const size_t stored = offsetof(offwake_stored_stack, ips) + depth * sizeof(uint64_t);
  if (int err = bpf_map__set_value_size(s->maps.stack_store, static_cast<uint32_t>(stored)))
    return Error("setting stack store depth", libbpf_errno(err));
  bpf_program__set_autoload(s->progs.offwake_fork, o.follow_forks || cfg_unwind_tables(o));
  bpf_program__set_autoload(s->progs.offwake_exit, !o.tgids.empty() || lazy_capture(o) || rseq);
  bpf_program__set_autoload(s->progs.offwake_rseq_return, rseq);
  // Lazy capture without task work nor rseq_update parks user stacks until a system call
  // returns (a program that runs on every system call of the machine: loaded only then).
  bpf_program__set_autoload(s->progs.offwake_sys_exit, use_sys_exit(o, task_work, rseq));
  bpf_program__set_autoload(s->progs.offwake_exec, lazy_capture(o) || cfg_unwind_tables(o));

  // Load. With -v, what each program cost the verifier ("processed N insns", against its
  // limit of a million), from the kernel's information on the loaded program. Not from a
  // verifier log of our own: a program given one is not loaded again with libbpf's, which on
  // a refusal is what says why (above, in the error).
  if (int err = skel::offwake__load(s.get())) {
    const std::string refused = verifier_refusal(log.text());
    const std::string what = refused.empty() ? "loading BPF object" : "loading BPF object: the verifier refused " + refused;
    return machine(with_log(permission_hint(Error(what, libbpf_errno(err)), log), log));
  }
  if (libbpf_verbosity() >= 1) {
    bpf_program* p = nullptr;
    bpf_object__for_each_program(p, s->obj) {
      bpf_prog_info info{};
      uint32_t len = sizeof(info);
      const int fd = bpf_program__fd(p);
      if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue; // not loaded (autoload off)
      fprintf(stderr, "perf offwake: BPF program %s: verifier processed %u insns\n", bpf_program__name(p),
              info.verified_insns);
    }
  }

  return s;
}

Result<OffwakeBpf> OffwakeBpf::load(const LoaderOptions& o) {
  // The machine, not the options, is why the programs cannot run: the caller may take another
  // back end. Only these failures are unavailable; the options' are usage.
  auto machine = [](const Error& e) { return e.with_kind(ErrorKind::kUnavailable); };
  if (o.user_threads_only && o.kernel_threads_only)
    return Error::usage("user-threads-only and kernel-threads-only exclude each other", EINVAL);
  if (o.state_mask == 0 || (o.state_mask & ~(OFFWAKE_WANT_S | OFFWAKE_WANT_D | OFFWAKE_WANT_I)) != 0)
    return Error::usage("state mask must be a combination of S, D and I", EINVAL);
  if (o.max_block_ns && o.max_block_ns < o.min_block_ns)
    return Error::usage("max-block is below min-block", EINVAL);
  if (o.tgids.size() > o.max_tgids) return Error::usage("more target processes than max_tgids", E2BIG);
  if (o.follow_forks && o.tgids.empty()) return Error::usage("follow_forks needs target processes", EINVAL);
  if (o.kernel_stack_skip > BPF_F_SKIP_FIELD_MASK) return Error::usage("kernel stack skip too large", EINVAL);
  if (o.chain_depth < 1 || o.chain_depth > OFFWAKE_MAX_CHAIN_DEPTH)
    return Error::usage("chain depth must be 1 to " + std::to_string(OFFWAKE_MAX_CHAIN_DEPTH), EINVAL);
  const uint32_t page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  if (o.timeline && (o.ringbuf_bytes < page || (o.ringbuf_bytes & (o.ringbuf_bytes - 1)) != 0))
    return Error::usage("ring buffer size must be a power of 2 and at least one page (" +
                            std::to_string(page) + " bytes)", EINVAL);
  if (Status st = probe_kernel_support(); !st) return machine(st.error());

  auto sysctl_depth = perf_event_max_stack();
  if (!sysctl_depth) return sysctl_depth.error();
  uint32_t depth = *sysctl_depth;
  if (o.max_stack_depth != 0 && o.max_stack_depth < depth) depth = o.max_stack_depth;
  if (depth > OFFWAKE_MAX_STACK_DEPTH) depth = OFFWAKE_MAX_STACK_DEPTH;

  const VmlinuxBtf vmlinux = load_vmlinux_btf();
  const PercpuFromRunqueue percpu = percpu_from_runqueue(vmlinux.get());
  const bool rseq = use_rseq(o, vmlinux.get());
  bool task_work = use_task_work(o, vmlinux.get());
  auto loaded = open_and_load(o, depth, percpu, task_work, rseq);
  // Some 6.18 kernels have the task work kfunc but refuse it to a tracepoint program ("sleepable
  // callback in a program that is not sleepable"): the programs are then loaded as for a kernel
  // without it (use_sys_exit()). Said with -v, and kept (task_work_refused()).
  bool task_work_refused = false;
  if (!loaded && task_work && loaded.error().kind() == ErrorKind::kUnavailable) {
    if (libbpf_verbosity() >= 1)
      fprintf(stderr, "perf offwake: the load above failed with task work, which this kernel may refuse to the "
                      "scheduler programs: loading again without it (deferred user stacks are then "
                      "walked at rseq_update, else at switch-out or sys_exit)\n");
    task_work = false;
    task_work_refused = true;
    loaded = open_and_load(o, depth, percpu, task_work, rseq);
  }
  if (!loaded) return loaded.error();
  SkelPtr s = std::move(loaded).value();

  OffwakeBpf bpf(std::move(s), depth, !o.tgids.empty(), percpu.preempt_count.has_value(), lazy_capture(o));
  bpf.task_work_refused_ = task_work_refused;
  if (o.run_time_stats) {
    auto stats = enable_run_time_stats();
    if (!stats) return stats.error();
    bpf.run_time_stats_ = std::move(stats).value();
  }
  if (o.timeline) {
    auto reader = EventReader::open(bpf.events_map_fd());
    if (!reader) return reader.error();
    bpf.events_ = std::move(reader).value();
  }
  for (uint32_t tgid : o.tgids) OFFWAKE_TRY(bpf.add_target_tgid(tgid));
  for (uint32_t tid : o.tids) {
    __u8 one = 1;
    if (bpf_map_update_elem(bpf_map__fd(bpf.skel_->maps.target_tids), &tid, &one, BPF_NOEXIST) != 0)
      return Error::from_errno("adding thread " + std::to_string(tid) + " to the filter");
  }
  if (!o.cgroup_path.empty()) {
    UniqueFd cg(open(o.cgroup_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    // A cgroup that cannot be opened is the option's fault, not the machine's (root opens any).
    if (!cg.valid()) return Error::from_errno("opening cgroup " + o.cgroup_path, ErrorKind::kUsage);
    __u32 zero = 0;
    __u32 fd = static_cast<__u32>(cg.get());
    if (bpf_map_update_elem(bpf_map__fd(bpf.skel_->maps.target_cgroup), &zero, &fd, BPF_ANY) != 0)
      return Error::from_errno("setting cgroup filter " + o.cgroup_path + " (must be a cgroup v2 directory)",
                               ErrorKind::kUsage);
  }
  return bpf;
}

OffwakeBpf::OffwakeBpf(OffwakeBpf&&) noexcept = default;
OffwakeBpf& OffwakeBpf::operator=(OffwakeBpf&&) noexcept = default;
OffwakeBpf::~OffwakeBpf() = default;

// Wakeups and forks are watched before blocks start being recorded, and blocks stop being
// recorded before wakeups stop being watched: otherwise a block that straddles the gap would
// end with no waker and count as a missed wakeup. System call returns (lazy user stacks) are
// watched before and after both, so that a block parked for its user stack finds it.
// The stack store is a hash map without preallocation: its entries come from the kernel's
// per-CPU BPF allocator caches, which start with one free entry of this size on each CPU and
// are refilled from an interrupt. A program storing two new stacks in one run on a CPU, with
// interrupts off as in sched_switch, would find the second allocation failing ("store full")
// until a refill ran. One insertion and deletion from user space on every CPU has each
// cache refilled to its high mark before the programs run.
static void warm_stack_store(int store_fd, uint32_t value_size) {
  cpu_set_t saved;
  if (sched_getaffinity(0, sizeof saved, &saved) != 0) return;
  std::vector<uint8_t> value(value_size);
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  for (long cpu = 0; cpu < cpus && cpu < CPU_SETSIZE; ++cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) continue;  // offline, or not allowed
    // Key 0 is no stack id (store ids have bit 62 set): nothing a program looks up.
    uint64_t key = 0;
    for (int i = 0; i < 2; ++i) {
      if (bpf_map_update_elem(store_fd, &key, value.data(), BPF_ANY) == 0) bpf_map_delete_elem(store_fd, &key);
    }
  }
  sched_setaffinity(0, sizeof saved, &saved);
}

Status OffwakeBpf::attach() {
  LibbpfLogCapture log;
  stats_on_at_attach_ = run_time_stats_.valid() || bpf_stats_sysctl_on();
  warm_stack_store(stack_store_fd(), bpf_map__value_size(skel_->maps.stack_store));
  struct {
    bpf_program* prog;
    bpf_link** link;
  } order[] = {
      {skel_->progs.offwake_exit, &skel_->links.offwake_exit},
      {skel_->progs.offwake_fork, &skel_->links.offwake_fork},
      {skel_->progs.offwake_exec, &skel_->links.offwake_exec},
      {skel_->progs.offwake_sys_exit, &skel_->links.offwake_sys_exit},
      {skel_->progs.offwake_rseq_return, &skel_->links.offwake_rseq_return},
      {skel_->progs.offwake_waking, &skel_->links.offwake_waking},
      {skel_->progs.offwake_switch, &skel_->links.offwake_switch},
  };
  for (const auto& p : order) {
    if (*p.link || !bpf_program__autoload(p.prog)) continue;
    bpf_link* link = bpf_program__attach(p.prog);
    if (!link) {
      Error e = permission_hint(Error::from_errno(std::string("attaching BPF program ") + bpf_program__name(p.prog)),
                                log);
      detach();
      return with_log(e, log);
    }
    *p.link = link;  // owned by the skeleton from here on
  }
  return ok_status();
}

Status OffwakeBpf::end_open_blocks(uint64_t stop_ns) {
  // Normally the stop detach() set. A later one would count open blocks past the time the
  // programs stopped seeing them end: the earlier of the two.
  if (!skel_->bss->stop_ns || stop_ns < skel_->bss->stop_ns) skel_->bss->stop_ns = stop_ns;
  LibbpfLogCapture log;
  std::unique_ptr<bpf_link, int (*)(bpf_link*)> link(bpf_program__attach_iter(skel_->progs.offwake_end_blocks, nullptr),
                                                     bpf_link__destroy);
  if (!link) return with_log(Error::from_errno("attaching the end-of-recording task iterator"), log);
  UniqueFd iter(bpf_iter_create(bpf_link__fd(link.get())));
  if (!iter.valid()) return Error::from_errno("creating the end-of-recording task iterator");
  // The program prints nothing: reading to the end runs it over every task.
  char buf[256];
  for (;;) {
    ssize_t n = read(iter.get(), buf, sizeof buf);
    if (n == 0) return ok_status();
    if (n < 0 && errno != EINTR) return Error::from_errno("running the end-of-recording task iterator");
  }
}

uint64_t OffwakeBpf::detach() {
  // The stop comes first: the programs record nothing from then on, while destroying their
  // links (and lazily the grace below) takes milliseconds. Once is enough (attach() may
  // detach after a failure, and a caller may detach again).
  if (!skel_->bss->stop_ns) __atomic_store_n(&skel_->bss->stop_ns, monotonic_now_ns(), __ATOMIC_SEQ_CST);
  const uint64_t stop = skel_->bss->stop_ns;
  for (bpf_link** link : {&skel_->links.offwake_switch, &skel_->links.offwake_waking}) {
    bpf_link__destroy(*link);
    *link = nullptr;
  }
  // Blocks that ended just before give their parked user stacks on the way back to user
  // space, within microseconds: a short grace before those programs go too (a task work
  // already scheduled runs regardless; what is still parked then is left to the iterator).
  if (lazy_) usleep(20'000);
  for (bpf_link** link : {&skel_->links.offwake_sys_exit, &skel_->links.offwake_rseq_return, &skel_->links.offwake_exec,
                          &skel_->links.offwake_fork, &skel_->links.offwake_exit}) {
    bpf_link__destroy(*link);
    *link = nullptr;
  }
  return stop;
}

Status OffwakeBpf::add_target_tgid(uint32_t tgid) {
  if (!filter_tgids_) return Error("no process filter: every process is traced already", EINVAL);
  __u8 one = 1;
  if (bpf_map_update_elem(target_tgids_fd(), &tgid, &one, BPF_ANY) != 0)
    return Error::from_errno("adding process " + std::to_string(tgid) + " to the filter");
  return ok_status();
}

Result<std::vector<Aggregate>> OffwakeBpf::read_aggregates() const {
  return bpf::read_aggregates(aggregates_fd());
}

Status OffwakeBpf::visit_aggregates(const AggregateBatchFn& fn) const {
  return bpf::visit_aggregates(aggregates_fd(), fn);
}

Result<offwake_counters> OffwakeBpf::read_counters() const { return bpf::read_counters(counters_fd()); }

Result<OffwakeBpf::RecursionMisses> OffwakeBpf::recursion_misses() const {
  auto p = programs();
  if (!p) return p.error();
  return p->misses;
}

Result<OffwakeBpf::Programs> OffwakeBpf::programs() const {
  auto runs = program_runs(skel_->obj);
  if (!runs) return runs.error();
  const std::string switches = bpf_program__name(skel_->progs.offwake_switch);
  const std::string wakeups = bpf_program__name(skel_->progs.offwake_waking);
  Programs r;
  r.measured = run_time_stats_.valid() || (stats_on_at_attach_ && bpf_stats_sysctl_on());
  r.programs = std::move(runs).value();
  for (const ProgramRuns& p : r.programs) {
    if (p.name == switches) r.misses.switches += p.recursion_misses;
    else if (p.name == wakeups) r.misses.wakeups += p.recursion_misses;
    else r.misses.other += p.recursion_misses;
  }
  return r;
}

Result<StackTraceMap> OffwakeBpf::stack_trace_map() const {
  return StackTraceMap::from_fds(stack_traces_fd(), stack_store_fd(), &skel_->bss->stack_store_epoch);
}

Result<size_t> OffwakeBpf::poll_events(int timeout_ms, const EventCallback& cb) {
  if (!events_) return Error("reading timeline events: not loaded in timeline mode", EINVAL);
  return events_->poll(timeout_ms, cb);
}

Result<size_t> OffwakeBpf::consume_events(const EventCallback& cb) {
  if (!events_) return Error("reading timeline events: not loaded in timeline mode", EINVAL);
  return events_->consume(cb);
}

int OffwakeBpf::events_fd() const { return events_ ? events_->epoll_fd() : -1; }

int OffwakeBpf::aggregates_fd() const {
  return bpf_map__fd(skel_->bss->agg_window & 1 ? skel_->maps.aggregates_next : skel_->maps.aggregates);
}

Result<int> OffwakeBpf::switch_window() {
  if (!skel_->rodata->switch_windows) return Error("switching windows: not loaded with switch_windows", EINVAL);
  const uint32_t old = skel_->bss->agg_window & 1;
  const int old_fd = aggregates_fd();
  // Sequentially consistent: the store is seen before the counts below are read, as each
  // program's count is taken before it reads agg_window again (see emit.bpf.h).
  __atomic_store_n(&skel_->bss->agg_window, old ^ 1, __ATOMIC_SEQ_CST);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) return Error("counting possible CPUs", -ncpus);
  struct busy_t {
    int64_t programs[2];
  };
  std::vector<busy_t> per_cpu(static_cast<size_t>(ncpus));
  const int busy_fd = bpf_map__fd(skel_->maps.window_busy);
  // A program holds a window for microseconds, but the task work that gives a parked block
  // its user stack runs preemptible: a task preempted there holds it until it runs again,
  // which on a loaded machine may take a while. Ten seconds means something is wrong, and
  // the old map's elements could be deleted under a program still adding to them.
  const uint64_t deadline = monotonic_now_ns() + 10'000'000'000ull;
  for (;;) {
    __u32 zero = 0;
    if (bpf_map_lookup_elem(busy_fd, &zero, per_cpu.data()) != 0)
      return Error::from_errno("reading the programs busy on the old window");
    int64_t busy = 0;
    for (const auto& b : per_cpu) busy += b.programs[old] != 0;
    if (busy == 0) return old_fd;
    if (monotonic_now_ns() > deadline)
      return Error("switching windows: BPF programs still adding to the old window after 10 s", EBUSY);
    usleep(100);
  }
}
int OffwakeBpf::counters_fd() const { return bpf_map__fd(skel_->maps.counters); }
int OffwakeBpf::stack_traces_fd() const { return bpf_map__fd(skel_->maps.stack_traces); }
int OffwakeBpf::stack_store_fd() const { return bpf_map__fd(skel_->maps.stack_store); }
int OffwakeBpf::target_tgids_fd() const { return bpf_map__fd(skel_->maps.target_tgids); }
int OffwakeBpf::task_blocks_fd() const { return bpf_map__fd(skel_->maps.task_blocks); }
int OffwakeBpf::cpu_current_fd() const { return bpf_map__fd(skel_->maps.cpu_current); }
bool OffwakeBpf::user_task_work() const { return skel_->rodata->cfg.user_task_work != 0; }
bool OffwakeBpf::user_rseq() const { return skel_->rodata->cfg.user_rseq != 0; }
int OffwakeBpf::events_map_fd() const { return bpf_map__fd(skel_->maps.events); }
int OffwakeBpf::unwind_rows_fd() const { return bpf_map__fd(skel_->maps.unwind_rows); }
uint32_t* OffwakeBpf::unwind_tables_epoch() const { return &skel_->bss->unwind_tables_epoch; }
int OffwakeBpf::unwind_processes_fd() const { return bpf_map__fd(skel_->maps.unwind_processes); }
int OffwakeBpf::unwind_wanted_fd() const {
  return skel_->rodata->cfg.unwind_on_request ? bpf_map__fd(skel_->maps.unwind_wanted) : -1;
}
uint32_t OffwakeBpf::unwind_rows_capacity() const {
  return skel_->rodata->cfg.unwind_tables ? bpf_map__max_entries(skel_->maps.unwind_rows) : 0;
}

}  // namespace offwake::bpf
