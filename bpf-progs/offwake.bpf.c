// SPDX-License-Identifier: GPL-2.0
/* Off-CPU time with blocked and waker stacks, aggregated in the kernel, or (timeline mode)
 * sent block by block through a ring buffer.
 *
 * Each stack is taken only for a block that is kept, and as late as possible:
 *
 * sched_switch, prev blocks (not preempted, state wanted): remember when and its state in
 *     prev's task storage. Its user stack is walked now, unless a duration filter is set:
 *     then the user registers stay as they are until the task returns to user space, and the
 *     stack is walked then, for kept blocks only, by a task work scheduled at switch-in
 *     (bpf_task_work_schedule_resume, Linux 6.18). Without that kfunc (or with the kernel's
 *     user walker) only blocks inside a system call are deferred, to its sys_exit.
 * sched_waking, in the waker's context: remember the waker and take its kernel and user
 *     stacks. With a duration filter, a block already longer than --max-block gets nothing,
 *     and one shorter than --min-block so far gets the waker's name, thread and the time
 *     (what the waker's context gives for the price of a few loads), but no stacks: if it
 *     reaches --min-block on the run queue after all, it is kept with that waker, marked
 *     OFFWAKE_WAKER_EARLY and counted. A wakeup of a task that is still runnable ends no
 *     block: ignored.
 * sched_switch, next was blocked: the block ends now. Filters apply; a kept block's kernel
 *     stack is taken from the sleeping task (bpf_get_task_stack: its kernel stack has not
 *     moved since it blocked), and the block is aggregated by (blocked thread, its stacks,
 *     state, waker, waker stacks), or sent in timeline mode; if its user stack is still to
 *     be walked it waits in task storage (pending) until the task is back in user space.
 * sched_switch, prev still marked blocked: the switch-in that ended its block was never seen.
 *     On this kernel (6.18, paravirtualised) sched_switch now and then does not fire at all
 *     for a switch, mostly out of the idle task (perf -e sched:sched_switch misses the same
 *     switches). The task is running, so the block is over: it is kept, ended at its
 *     recorded wakeup (or now if none), and counted in late_ends; its kernel stack is gone.
 *
 * Stacks: kernel stacks of the current task come from bpf_get_stackid() into one
 * BPF_MAP_TYPE_STACK_TRACE map compared exactly (no BPF_F_FAST_STACK_CMP, no
 * BPF_F_REUSE_STACKID: ids stored in keys keep naming their stack). That map keeps one
 * stack per hash bucket; a stack whose bucket is taken goes to stack_store instead, a hash
 * map that compares whole stacks, which also holds the stacks these programs walk or copy
 * themselves: user stacks (a frame-pointer walk that stops before any read that would fault,
 * see walk_frame) and kernel stacks of sleeping tasks.
 */
#include <linux/bpf.h>
#include <linux/errno.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "offwake.h"

char LICENSE[] SEC("license") = "GPL";

#define PF_IO_WORKER 0x00000010u
#define PF_USER_WORKER 0x00004000u
#define PF_KTHREAD 0x00200000u
/* No user stack of their own to speak of: kernel threads, io_uring and other user workers. */
#define PF_NO_USER_STACK (PF_KTHREAD | PF_USER_WORKER | PF_IO_WORKER)

/* preempt_count bits (include/linux/preempt.h) */
#define SOFTIRQ_OFFSET 0x00000100u
#define HARDIRQ_MASK 0x000f0000u
#define NMI_MASK 0x00f00000u

/* The kfunc that runs a callback in a task's own context on its way back to user space
 * (Linux 6.18). Weak: on older kernels deferred user stacks use the sys_exit program. */
struct bpf_task_work {
	__u64 opaque;
} __attribute__((aligned(8)));
/* Complete, not just declared: libbpf compares the kfunc's prototype with the kernel's, and a
 * declared-only struct does not match a defined one. Never accessed. */
struct bpf_map {
	__u32 id;
} __attribute__((preserve_access_index));
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw, void *map__map,
					      int (*callback)(struct bpf_map *map, void *key, void *value),
					      void *aux__prog) __ksym __weak;

/* Just the fields we read; CO-RE relocates them to this kernel's layout. */
struct mm_struct;

struct rq; /* only its address is taken (preempt_count) */

struct cfs_rq {
	struct rq *rq;
} __attribute__((preserve_access_index));

struct sched_entity {
	struct cfs_rq *cfs_rq;
	unsigned char sched_delayed;
} __attribute__((preserve_access_index));

struct thread_info {
	unsigned int cpu;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_info thread_info;
	unsigned int flags;
	int on_cpu;
	int on_rq;
	int pid;
	int tgid;
	struct mm_struct *mm;
	__u64 start_time;
	__u64 self_exec_id;
	char comm[OFFWAKE_COMM_LEN];
	struct sched_entity se;
} __attribute__((preserve_access_index));

struct pt_regs {
	unsigned long bp;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long sp;
} __attribute__((preserve_access_index));

#define TB_WAKER OFFWAKE_TB_WAKER
#define TB_WAKE_ON_CPU OFFWAKE_TB_WAKE_ON_CPU
#define TB_DEFER_USER OFFWAKE_TB_DEFER_USER
#define TB_PENDING OFFWAKE_TB_PENDING
#define TB_LAST_KEPT OFFWAKE_TB_LAST_KEPT

const volatile struct offwake_config cfg = {
	.state_mask = OFFWAKE_WANT_S | OFFWAKE_WANT_D | OFFWAKE_WANT_I,
	.stack_depth = OFFWAKE_MAX_STACK_DEPTH,
	.user_stack_limit = 8 << 20,
};

/* max_entries and value_size (depth * 8) are set by the loader before load. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, OFFWAKE_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} stack_traces SEC(".maps");

/* Whole-stack-compared stacks, keyed by OFFWAKE_STORE_ID | hash. The loader sets max_entries
 * and cuts value_size to the stack depth. Not preallocated: memory follows the stacks seen,
 * not the capacity (a large one would take seconds to load). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct offwake_stored_stack);
	__uint(max_entries, 16384);
} stack_store SEC(".maps");

/* The loader sets key_size to the part of struct offwake_key the chain depth uses
 * (OFFWAKE_KEY_SIZE): a key without a chain is hashed and compared without one. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(key_size, sizeof(struct offwake_key));
	__type(value, struct offwake_value);
	__uint(max_entries, 16384);
} aggregates SEC(".maps");

/* Timeline mode only. The loader sizes it (a power-of-2 number of pages); in aggregated mode
 * it is one page, and the cfg.timeline branch that writes it is dead code for the verifier. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offwake_task_block);
} task_blocks SEC(".maps");

/* A task's storage in task_blocks, created if it has none. A task's first storage of any map
 * is published with a compare-and-swap: when another CPU gives the same task its first
 * storage at the same moment (the task blocking here while woken there, or another
 * recorder's program), the loser's call fails (-EAGAIN) and the kernel leaves the retry to the
 * caller. The storage is then there, and a second call adds this map's element to it. A
 * second failure (the CPU's task-storage lock held, no memory in atomic context) is counted by
 * the caller as a loss. */
static __always_inline struct offwake_task_block *task_block_create(struct task_struct *t)
{
	struct offwake_task_block *b = bpf_task_storage_get(&task_blocks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!b)
		b = bpf_task_storage_get(&task_blocks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	return b;
}

/* Filled by the loader after load, before attach; grown by follow_forks, pruned at exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1024);
} target_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1);
} target_cgroup SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct offwake_counters);
	__uint(max_entries, 1);
} counters SEC(".maps");

/* Per-CPU scratch space for one stack, one slot per program: sys_exit runs with interrupts
 * on, and a wakeup from an interrupt may run the waking program on the same CPU meanwhile. */
#define WINDOW 512 /* bytes of user stack read at once */
struct scratch {
	struct offwake_stored_stack st;
	__u64 win_start;
	__u64 win_len;
	__u8 window[WINDOW + 16];
};
enum { SLOT_SWITCH, SLOT_WAKING, SLOT_SYSCALL, SLOT_OTHER, NR_SLOTS };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, NR_SLOTS);
} scratch SEC(".maps");

/* One entry per thread that had a block's user stack deferred, until the thread exits: the
 * task work that walks it, and the walk's scratch space (the callback can be preempted, so a
 * per-CPU slot could be taken over halfway). The loader sets max_entries. */
struct user_work {
	struct bpf_task_work tw;
	struct scratch s;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct user_work);
	__uint(max_entries, 65536);
} user_works SEC(".maps");

/* A zeroed entry to create user_works entries from: too large for the BPF stack, and of a
 * plain type (the verifier refuses a source that holds a struct bpf_task_work). */
struct user_work_bytes {
	__u64 tw;
	struct scratch s;
};
_Static_assert(sizeof(struct user_work_bytes) == sizeof(struct user_work), "user_work layout");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct user_work_bytes);
	__uint(max_entries, 1);
} user_work_zero SEC(".maps");

/* The end of the recording (bpf_ktime_get_ns() time), set by user space before it detaches the
 * scheduler programs: from then on they record nothing, so that no block ends, starts or is
 * woken after the time that the blocks still open are counted up to (offwake_end_blocks).
 * Detaching takes time of its own, and lazily a grace period follows for parked user stacks:
 * a stop taken after those counted every open block tens of milliseconds too long. */
__u64 stop_ns = 0;

/* Whether the recording has stopped by `now`. */
static __always_inline int stopped(__u64 now)
{
	__u64 stop = *(volatile __u64 *)&stop_ns;

	return stop && now >= stop;
}
/* Blocks parked for their user stack in sys_exit mode (no task work), machine-wide: sys_exit,
 * which runs on every system call, does nothing else while there are none. */
__s64 parked = 0;

static __always_inline struct offwake_counters *cpu_counters(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

#define COUNT(c, field) do { if (c) (c)->field++; } while (0)

/* The task this CPU last switched to, as seen by offwake_switch. A switch-out of another task
 * means switches went by untraced: on some platforms the kernel runs no BPF program while
 * certain tasks are current (here: the VM's init process), nor in interrupts taken on them. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} cpu_current SEC(".maps");

static __always_inline struct scratch *scratch_slot(__u32 slot)
{
	return bpf_map_lookup_elem(&scratch, &slot);
}

static __always_inline int task_wanted(struct task_struct *t)
{
	__u32 tgid;

	if (cfg.target_tid && (__u32)t->pid != cfg.target_tid)
		return 0;
	if (cfg.user_threads_only && (t->flags & PF_KTHREAD))
		return 0;
	if (cfg.kernel_threads_only && !(t->flags & PF_KTHREAD))
		return 0;
	if (cfg.filter_tgids) {
		tgid = t->tgid;
		if (!bpf_map_lookup_elem(&target_tgids, &tgid))
			return 0;
	}
	return 1;
}

static __always_inline int state_wanted(__u32 state)
{
	if (state & OFFWAKE_STATE_UNINTERRUPTIBLE) {
		if (state & OFFWAKE_STATE_NOLOAD)
			return cfg.state_mask & OFFWAKE_WANT_I;
		return cfg.state_mask & OFFWAKE_WANT_D;
	}
	if (state & OFFWAKE_STATE_INTERRUPTIBLE)
		return cfg.state_mask & OFFWAKE_WANT_S;
	return 0;
}

/* Whether block durations are filtered, so that stacks are worth deferring. */
static __always_inline int lazy(void)
{
	return !cfg.eager && (cfg.min_block_ns || cfg.max_block_ns);
}

/* Wakeup chains (--chain-depth > 1). Constant after load: with depth 1 the verifier drops
 * every chain branch, and nothing of this runs. */
static __always_inline int chains(void)
{
	return cfg.chain_depth > 1;
}

static __always_inline int duration_kept(__u64 delta)
{
	return delta >= cfg.min_block_ns && !(cfg.max_block_ns && delta > cfg.max_block_ns);
}

/* Who a task is: its start time tells a reused pid apart, its exec count an exec. */
static __always_inline __u64 task_ident(struct task_struct *t)
{
	__u64 id = t->start_time ^ (t->self_exec_id * 0x9E3779B97F4A7C15ull);

	return id ? id : 1;
}

static __always_inline int frames_to_bytes(void)
{
	__u32 depth = cfg.stack_depth;

	if (depth > OFFWAKE_MAX_STACK_DEPTH)
		depth = OFFWAKE_MAX_STACK_DEPTH;
	return depth * sizeof(__u64);
}

/* ---- The stack store: whole stacks compared, no collisions while it has room ---- */

struct frames_ctx {
	const __u64 *a; /* the scratch stack */
	const __u64 *b; /* a stored stack */
	__u64 hash;
	__u32 nr;
	__u32 differ;
};

/* An index the verifier can see is below both the array size and the stored depth (the
 * compiler may otherwise index with the copy it had before the check). */
static __always_inline __u64 frame_index(__u32 i)
{
	volatile __u64 v = i;
	__u64 j = v;

	if (j >= OFFWAKE_MAX_STACK_DEPTH || j >= cfg.stack_depth)
		return OFFWAKE_MAX_STACK_DEPTH;
	return j;
}

static long hash_frame(__u32 i, void *data)
{
	struct frames_ctx *f = data;
	__u64 j = frame_index(i);

	if (j >= OFFWAKE_MAX_STACK_DEPTH)
		return 1;
	f->hash = (f->hash ^ f->a[j]) * 0x100000001B3ull;
	f->hash ^= f->hash >> 29;
	return 0;
}

static long compare_frame(__u32 i, void *data)
{
	struct frames_ctx *f = data;
	__u64 j = frame_index(i);

	if (j >= OFFWAKE_MAX_STACK_DEPTH)
		return 1;
	if (f->a[j] != f->b[j]) {
		f->differ = 1;
		return 1;
	}
	return 0;
}

static __always_inline int same_stack(struct offwake_stored_stack *a, struct offwake_stored_stack *b)
{
	struct frames_ctx f = { .a = a->ips, .b = b->ips };
	__u32 nr = a->nr;

	if (nr != b->nr || a->half != b->half)
		return 0;
	if (nr > OFFWAKE_MAX_STACK_DEPTH)
		return 0;
	bpf_loop(nr, compare_frame, &f, 0);
	return !f.differ;
}

/* Stores s->st (nr frames of `half`) and returns its id, or -errno (counted). Tries a second
 * hash if the first one names another stack. */
static __always_inline __s64 store_stack(struct scratch *s, __u32 half, struct offwake_counters *c)
{
	struct frames_ctx f = { .a = s->st.ips, .hash = 0xCBF29CE484222325ull ^ half };
	struct offwake_stored_stack *v;
	__u32 nr = s->st.nr;
	__u64 id;
	long err;
	int attempt;

	if (nr > OFFWAKE_MAX_STACK_DEPTH)
		nr = OFFWAKE_MAX_STACK_DEPTH;
	s->st.half = half;
	bpf_loop(nr, hash_frame, &f, 0);
	for (attempt = 0; attempt < 2; attempt++) {
		id = OFFWAKE_STORE_ID | (f.hash & OFFWAKE_STORE_HASH_MASK);
		v = bpf_map_lookup_elem(&stack_store, &id);
		if (!v) {
			err = bpf_map_update_elem(&stack_store, &id, &s->st, BPF_NOEXIST);
			if (!err)
				return id;
			if (err != -EEXIST) {
				if (c && half <= OFFWAKE_USER)
					c->stack_map_full[half & 1]++;
				return -ENOMEM;
			}
			v = bpf_map_lookup_elem(&stack_store, &id); /* another CPU stored it first */
			if (!v)
				continue;
		}
		if (same_stack(&s->st, v))
			return id;
		f.hash = (f.hash + 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
	}
	if (c)
		c->stack_collision[half & 1]++;
	return -EEXIST;
}

/* Counts a failed stack helper call by kind and returns it. */
static __always_inline __s64 stack_error(long err, int half, struct offwake_counters *c)
{
	if (!c)
		return err;
	if (err == -EFAULT)
		c->stack_walk_failed[half & 1]++;
	else
		c->stack_other_error[half & 1]++;
	return err;
}

/* bpf_get_stackid() of the current task; a stack whose bucket another stack owns goes to
 * the stack store. Kernel walks from tp_btf start inside this JITed program, which has no
 * ORC data: the first frames are junk (two on x86 6.18: not even kernel addresses) and would
 * split identical stacks into different ids, so they are skipped here. */
static __always_inline __s64 current_stack(void *ctx, __u64 flags, int half, struct scratch *s,
					   struct offwake_counters *c)
{
	long id, n;

	if (half == OFFWAKE_KERNEL)
		flags |= cfg.kernel_stack_skip & BPF_F_SKIP_FIELD_MASK;
	if (c)
		c->stack_captures[half & 1]++;
	id = bpf_get_stackid(ctx, &stack_traces, flags);
	if (id >= 0)
		return id;
	if (id != -EEXIST || !s)
		return stack_error(id, half, c);
	/* The same unwind again, into the store. */
	n = bpf_get_stack(ctx, s->st.ips, frames_to_bytes(), flags);
	if (n <= 0)
		return stack_error(n ? n : -EFAULT, half, c);
	s->st.nr = n / sizeof(__u64);
	COUNT(c, stack_store_fallbacks[half & 1]);
	return store_stack(s, half, c);
}

/* The kernel stack of a task that is not running (blocked, or about to be switched in): it
 * has not moved since the task blocked, so it is the blocked stack. */
static __always_inline __s64 sleeping_kernel_stack(struct task_struct *t, struct scratch *s,
						   struct offwake_counters *c)
{
	long n;

	if (!s)
		return -ENOMEM;
	COUNT(c, stack_captures[OFFWAKE_KERNEL]);
	n = bpf_get_task_stack(t, s->st.ips, frames_to_bytes(), 0);
	if (n <= 0)
		return stack_error(n ? n : -EFAULT, OFFWAKE_KERNEL, c);
	s->st.nr = n / sizeof(__u64);
	return store_stack(s, OFFWAKE_KERNEL, c);
}

/* ---- The user stack, walked by frame pointers ---- */

struct walk_ctx {
	struct scratch *s;
	struct task_struct *task; /* another task (walk_task_frame), or 0 for the current one */
	__u64 fp;
	__u64 lo; /* a frame lies at or above this */
	__u64 hi; /* ... and below this */
	__u32 nr;
	__u32 depth;
};

/* One frame: {next frame pointer, return address} at fp. Stops where bpf_get_stackid's walk
 * would fault or find nothing: a frame pointer that is zero, misaligned, not above the
 * previous frame or outside the thread's stack. Also at a return address that is no user
 * address (code without frame pointers left other data there): the frames so far are kept. Such a read costs a page fault with exception
 * fixup, several microseconds here, and gives nothing. The stack is read a window at a time,
 * within one page, so that shallow stacks cost one read. */
static __always_inline long walk_step(struct walk_ctx *w, int other_task)
{
	struct scratch *s = w->s;
	__u64 fp = w->fp, off, len, next, ret;
	__u64 n = frame_index(w->nr);
	long err;

	if (n >= w->depth || n >= OFFWAKE_MAX_STACK_DEPTH)
		return 1;
	if (!fp || (fp & 7) || fp < w->lo || fp >= w->hi)
		return 1;
	if (fp < s->win_start || fp + 16 > s->win_start + s->win_len) {
		len = 4096 - (fp & 4095);
		if (len < 16)
			len = 16;
		if (len > WINDOW)
			len = WINDOW;
		if (other_task)
			err = bpf_copy_from_user_task(s->window, len, (void *)fp, w->task, 0);
		else
			err = bpf_probe_read_user(s->window, len, (void *)fp);
		if (err) {
			s->win_len = 0;
			return 1; /* unmapped: bpf_get_stackid's walk ends here too */
		}
		s->win_start = fp;
		s->win_len = len;
	}
	off = (fp - s->win_start) & (WINDOW - 1);
	next = *(__u64 *)&s->window[off];
	ret = *(__u64 *)&s->window[off + 8];
	if (!ret || ret >= OFFWAKE_USER_ADDR_LIMIT)
		return 1;
	s->st.ips[n] = ret;
	w->nr = n + 1;
	w->lo = fp + 16;
	w->fp = next;
	return 0;
}

static long walk_frame(__u32 i, void *data)
{
	return walk_step(data, 0);
}

/* The same for a task that is not running, from a sleepable program only: its memory is
 * read through its own mm (bpf_copy_from_user_task). */
static long walk_task_frame(__u32 i, void *data)
{
	return walk_step(data, 1);
}

/* Task t's user stack, from the registers it entered the kernel with: the current task's,
 * or (other_task, sleepable programs only) a task that is not running. */
static __always_inline __s64 user_stack_of(void *ctx, struct task_struct *t, int other_task, struct scratch *s,
					   struct offwake_counters *c)
{
	struct pt_regs *regs;
	struct walk_ctx w = {};

	if (t->flags & PF_NO_USER_STACK)
		return OFFWAKE_NO_STACK;
	if (!t->mm) {
		COUNT(c, no_user_context);
		return -OFFWAKE_ERR_NO_USER_CONTEXT;
	}
	if (cfg.kernel_user_walker && !other_task)
		return current_stack(ctx, BPF_F_USER_STACK, OFFWAKE_USER, s, c);
	if (!s)
		return -ENOMEM;
	COUNT(c, stack_captures[OFFWAKE_USER]);
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!regs)
		return stack_error(-EFAULT, OFFWAKE_USER, c);
	s->st.ips[0] = regs->ip;
	s->win_start = 0;
	s->win_len = 0;
	w.s = s;
	w.task = t;
	w.fp = regs->bp;
	w.lo = regs->sp;
	w.hi = regs->sp + cfg.user_stack_limit;
	w.nr = 1;
	w.depth = cfg.stack_depth;
	bpf_loop(OFFWAKE_MAX_STACK_DEPTH, other_task ? walk_task_frame : walk_frame, &w, 0);
	s->st.nr = w.nr;
	return store_stack(s, OFFWAKE_USER, c);
}

static __always_inline __s64 current_user_stack(void *ctx, struct scratch *s, struct offwake_counters *c)
{
	return user_stack_of(ctx, bpf_get_current_task_btf(), 0, s, c);
}

/* ---- Interrupt context ---- */

/* This CPU's preempt_count, found from the current task's runqueue (a static per-CPU
 * variable like preempt_count itself). Returns -1 if it cannot be read. */
static __always_inline long preempt_count(void)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct cfs_rq *cfs;
	__u64 rq;
	__u32 pc = 0;

	if (!cfg.irq_detect)
		return -1;
	cfs = cur->se.cfs_rq;
	if (!cfs)
		return -1;
	rq = (__u64)cfs->rq; /* a BTF-typed load: no helper call */
	if (!rq)
		return -1;
	if (bpf_probe_read_kernel(&pc, sizeof(pc), (void *)(rq + cfg.preempt_count_from_rq)))
		return -1;
	return pc;
}

/* Which interrupt context, if any, the current code runs in (OFFWAKE_WAKER_* bits). */
static __always_inline __u32 irq_context(void)
{
	long pc = preempt_count();

	if (pc < 0)
		return OFFWAKE_WAKER_IRQ_UNKNOWN;
	if (pc & NMI_MASK)
		return OFFWAKE_WAKER_NMI;
	if (pc & HARDIRQ_MASK)
		return OFFWAKE_WAKER_HARDIRQ;
	if (pc & SOFTIRQ_OFFSET)
		return OFFWAKE_WAKER_SOFTIRQ;
	return 0;
}

/* ---- Blocks: kept ones become aggregates or events ---- */

static __always_inline void aggregate(struct offwake_key *key, __u64 delta, __u64 stamp,
				      struct offwake_counters *c)
{
	struct offwake_value zero = {}, *v;
	long err;

	v = bpf_map_lookup_elem(&aggregates, key);
	if (!v) {
		/* Insert zeros and add below, so that two CPUs racing to create the bucket both count. */
		err = bpf_map_update_elem(&aggregates, key, &zero, BPF_NOEXIST);
		if (!err || err == -EEXIST)
			v = bpf_map_lookup_elem(&aggregates, key);
		if (!v) {
			if (c) {
				c->agg_map_full++;
				c->agg_map_full_ns += delta;
			}
			return;
		}
	}
	__sync_fetch_and_add(&v->total_ns, delta);
	__sync_fetch_and_add(&v->count, 1);
	if (delta > v->max_ns)
		v->max_ns = delta;
	if (stamp > v->last_ns)
		v->last_ns = stamp;
	COUNT(c, blocks);
}

/* Timeline mode: the block as one event. A full ring buffer loses it, counted. */
static __always_inline void send_event(const struct offwake_key *key, __u64 start, __u64 end, __u64 stamp,
				       __u32 cpu, struct offwake_counters *c)
{
	struct offwake_event *e;

	/* Without a chain, the event ends where the key's chain would start. */
	if (chains())
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	else
		e = bpf_ringbuf_reserve(&events, OFFWAKE_EVENT_BASE_SIZE, 0);
	if (!e) {
		if (c) {
			c->ringbuf_drops++;
			c->ringbuf_drops_ns += end - start;
		}
		return;
	}
	if (chains())
		__builtin_memcpy(&e->key, key, sizeof(e->key));
	else
		__builtin_memcpy(&e->key, key, OFFWAKE_KEY_BASE_SIZE);
	e->start_ns = start;
	e->end_ns = end;
	e->stamp_ns = stamp;
	e->cpu = cpu;
	e->reserved = 0;
	/* Default wakeup policy: the reader is woken only when it has caught up. */
	bpf_ringbuf_submit(e, 0);
	COUNT(c, blocks);
}

static __always_inline void emit(struct offwake_key *key, __u64 start, __u64 end, __u64 stamp, __u32 cpu,
				 struct offwake_counters *c)
{
	if (cfg.timeline)
		send_event(key, start, end, stamp, cpu, c);
	else
		aggregate(key, end - start, stamp, c);
}

static __always_inline void clear_waker(struct offwake_task_block *b)
{
	b->flags &= ~(TB_WAKER | TB_WAKE_ON_CPU);
}

/* dst->hop[i] = src[i] for the first n hops that the depth has room for. */
static __always_inline void copy_hops(struct offwake_hop *dst, const struct offwake_hop *src, __u32 n)
{
#pragma unroll
	for (int i = 0; i < OFFWAKE_MAX_CHAIN_DEPTH - 1; i++) {
		if (i + 1 >= cfg.chain_depth || i >= n)
			break;
		__builtin_memcpy(&dst[i], &src[i], sizeof(dst[i]));
	}
}

/* b's block, just finished as `key` with user stack id `user`, becomes the task's latest
 * block: the first hop of the chains of the tasks it wakes next, its own chain behind it. */
static __always_inline void set_last(struct offwake_task_block *b, const struct offwake_key *key, __s64 user)
{
	struct offwake_chain *l = &b->last;
	struct offwake_hop *h = &l->hop[0];
	__u32 n = key->chain.hops + 1;

	h->kern_stack_id = key->kern_stack_id;
	h->user_stack_id = user;
	h->state = key->state;
	h->waker_flags = key->waker_flags;
	h->waker_tgid = key->waker_tgid;
	h->waker_tid = key->waker_tid;
	h->waker_ident = key->waker_ident;
	h->waker_kern_stack_id = key->waker_kern_stack_id;
	h->waker_user_stack_id = key->waker_user_stack_id;
	__builtin_memcpy(h->waker_comm, key->waker_comm, sizeof(h->waker_comm));
	copy_hops(&l->hop[1], key->chain.hop, cfg.chain_depth > 2 ? key->chain.hops : 0);
	if (n >= cfg.chain_depth) {
		n = cfg.chain_depth - 1;
		l->end = OFFWAKE_CHAIN_END_DEPTH;
	} else {
		l->end = key->chain.end;
	}
	l->hops = n;
}

/* The chain of the block the waker `cur` (not an interrupt) is ending: its own latest block
 * and what was behind that, as `last` holds them. */
static __always_inline void take_chain(struct offwake_task_block *b, struct task_struct *cur)
{
	struct offwake_task_block *w;
	__u32 n;

	b->chain.hops = 0;
	if (cur->flags & PF_KTHREAD) {
		b->chain.end = OFFWAKE_CHAIN_END_KTHREAD;
		return;
	}
	w = bpf_task_storage_get(&task_blocks, cur, 0, 0);
	if (!w || !w->last.hops) {
		b->chain.end = w && w->last.end ? w->last.end : OFFWAKE_CHAIN_END_UNSEEN;
		return;
	}
	n = w->last.hops;
	copy_hops(b->chain.hop, w->last.hop, n);
	b->chain.hops = n < cfg.chain_depth ? n : cfg.chain_depth - 1;
	b->chain.end = w->last.end;
}

/* Whether b's recorded wakeup ended the open block: it came during the block, or while the
 * task was on its way into the scheduler to start it. */
static __always_inline int waker_of_block(struct offwake_task_block *b)
{
	return (b->flags & TB_WAKER) && ((b->flags & TB_WAKE_ON_CPU) || b->wake_ts >= b->block_ts);
}

static int user_work_run(struct bpf_map *map, void *key, void *value);

/* Whether t (not running) shares the memory of the task running on this CPU, which is not a
 * kernel thread: then bpf_probe_read_user() reads t's user stack as well as its own. */
static __always_inline int same_memory_as_current(struct task_struct *t)
{
	struct task_struct *cur = bpf_get_current_task_btf();

	return cur->mm && cur->mm == t->mm && !(cur->flags & PF_NO_USER_STACK);
}

/* Has user_work_run called in t's context before t returns to user space (t is being
 * switched in, in the kernel). 0 if so, or if an earlier one is still to run, which then
 * serves; else -errno. */
static __always_inline long schedule_user_work(struct task_struct *t)
{
	struct user_work *w;
	struct user_work_bytes *zero;
	__u32 tid = t->pid, k0 = 0;
	long err;

	if (!bpf_task_work_schedule_resume_impl)
		return -ENOSYS;
	w = bpf_map_lookup_elem(&user_works, &tid);
	if (!w) {
		zero = bpf_map_lookup_elem(&user_work_zero, &k0);
		if (!zero)
			return -ENOMEM;
		err = bpf_map_update_elem(&user_works, &tid, zero, BPF_NOEXIST);
		if (err && err != -EEXIST)
			return err;
		w = bpf_map_lookup_elem(&user_works, &tid);
		if (!w)
			return -ENOMEM;
	}
	err = bpf_task_work_schedule_resume_impl(t, &w->tw, &user_works, user_work_run, 0);
	return err == -EBUSY ? 0 : err;
}

/* The open block of task t (b->block_ts != 0) ended at `end` and is kept: its key, with
 * kernel stack `kern`, and the recorded waker if `with_waker`. Emitted now, or parked in
 * b->pending until its user stack is walked (a parked block is always emitted before the
 * task can block again, so b->pending is free here). A block without a waker of its own gets
 * `no_waker`: OFFWAKE_WAKER_NONE (a missed wakeup) or OFFWAKE_WAKER_STILL_BLOCKED (the
 * recording stopped first). A waker recorded before the block reached --min-block
 * (OFFWAKE_WAKER_EARLY: named, without stacks or chain) is counted in woken_early. */
static __always_inline void finish_block(struct task_struct *t, struct offwake_task_block *b, __u64 end, __s64 kern,
					 int with_waker, __u32 no_waker, int at_switch_in, struct offwake_counters *c)
{
	struct offwake_key *key = &b->pending;
	__u64 start = b->block_ts;
	__u64 stamp = start;
	int park = 0;

	if (chains())
		__builtin_memset(key, 0, sizeof(*key));
	else
		__builtin_memset(key, 0, OFFWAKE_KEY_BASE_SIZE);
	key->tgid = t->tgid;
	key->tid = t->pid;
	key->ident = task_ident(t);
	key->kern_stack_id = kern;
	key->user_stack_id = b->user_stack_id;
	key->state = b->state;
	/* The comm at the end of the block: the thread could not rename itself while blocked. */
	__builtin_memcpy(key->comm, t->comm, sizeof(key->comm));
	if (with_waker) {
		key->waker_flags = b->waker_flags;
		key->waker_tgid = b->waker_tgid;
		key->waker_tid = b->waker_tid;
		key->waker_ident = b->waker_ident;
		key->waker_kern_stack_id = b->waker_kern_stack_id;
		key->waker_user_stack_id = b->waker_user_stack_id;
		__builtin_memcpy(key->waker_comm, b->waker_comm, sizeof(key->waker_comm));
		/* Both threads had these identities at the wakeup: the blocked one was asleep, the
		 * waker was running. */
		stamp = b->wake_ts;
		if (b->waker_flags & OFFWAKE_WAKER_EARLY)
			COUNT(c, woken_early);
	} else {
		key->waker_flags = no_waker;
		key->waker_kern_stack_id = OFFWAKE_NO_STACK;
		key->waker_user_stack_id = OFFWAKE_NO_STACK;
		if (no_waker == OFFWAKE_WAKER_NONE)
			COUNT(c, missed_wakeups);
	}
	if (chains()) {
		if (with_waker) {
			copy_hops(key->chain.hop, b->chain.hop, b->chain.hops);
			key->chain.hops = b->chain.hops;
			key->chain.end = b->chain.end;
		} else {
			key->chain.end = OFFWAKE_CHAIN_END_NO_WAKER;
		}
	}
	b->block_ts = 0;
	/* Only a switch-in can have a user stack still to walk (the other callers settle it
	 * first, and the sleepable iterator may not even refer to the task work). */
	if (at_switch_in && (b->flags & TB_DEFER_USER)) {
		b->flags &= ~TB_DEFER_USER;
		b->pending_start = start;
		b->pending_end = end;
		b->pending_stamp = stamp;
		b->pending_cpu = bpf_get_smp_processor_id();
		if (!cfg.kernel_user_walker && same_memory_as_current(t)) {
			/* A thread of the process on the CPU now: its memory is the current one,
			 * so its stack is walked here, at no more cost than at switch-out. */
			key->user_stack_id = user_stack_of(0, t, 0, scratch_slot(SLOT_SWITCH), c);
		} else if (!cfg.user_task_work) {
			b->flags |= TB_PENDING;
			__sync_fetch_and_add(&parked, 1);
			park = 1;
		} else if (!schedule_user_work(t)) {
			b->flags |= TB_PENDING;
			COUNT(c, user_work_scheduled);
			park = 1;
		} else {
			COUNT(c, user_work_failed);
			key->user_stack_id = -OFFWAKE_ERR_NO_TASK_WORK;
		}
	}
	/* A parked block's user stack is filled in when it is walked (emit_pending). */
	if (chains())
		set_last(b, key, park ? -OFFWAKE_ERR_IN_PROGRESS : key->user_stack_id);
	if (!park)
		emit(key, start, end, stamp, bpf_get_smp_processor_id(), c);
}

/* The parked block gets user stack `user` and is emitted. */
static __always_inline void emit_pending(struct offwake_task_block *b, __s64 user, struct offwake_counters *c)
{
	b->flags &= ~TB_PENDING;
	if (!cfg.user_task_work)
		__sync_fetch_and_add(&parked, -1);
	b->pending.user_stack_id = user;
	if (chains())
		b->last.hop[0].user_stack_id = user; /* the parked block is the task's latest */
	emit(&b->pending, b->pending_start, b->pending_end, b->pending_stamp, b->pending_cpu, c);
}

/* Whether a block of this length so far is dropped by the duration filters; counted. */
static __always_inline int filtered_out(struct offwake_task_block *b, __u64 delta, struct offwake_counters *c)
{
	if (duration_kept(delta)) {
		b->flags |= TB_LAST_KEPT;
		return 0;
	}
	b->flags &= ~TB_LAST_KEPT;
	b->block_ts = 0;
	if (chains()) {
		/* The latest block has no stacks: the tasks this one wakes get no hop from it. */
		b->last.hops = 0;
		b->last.end = OFFWAKE_CHAIN_END_NOT_KEPT;
	}
	b->flags &= ~TB_DEFER_USER;
	if (!(b->flags & TB_WAKE_ON_CPU))
		clear_waker(b); /* an on-CPU wakeup is the next block's */
	COUNT(c, filtered);
	return 1;
}

/* The current task `cur` runs with b's block still open: its switch-in was not traced. The
 * block ended at its recorded wakeup if there was one, else now (an upper bound). Its kernel
 * stack is gone (unless taken at switch-out, --sched-frames), and so is a deferred user
 * stack: the task may have left that system call since. */
static __always_inline void end_missed_block(struct task_struct *cur, struct offwake_task_block *b, __u64 now,
					     struct offwake_counters *c)
{
	__s64 kern = b->kern_stack_id;
	__u64 end = now;
	/* A wakeup that came while the task was on a CPU again belongs to the block its
	 * switch-out is starting now, not to this one: it stays for that block. */
	int own = (b->flags & TB_WAKER) && !(b->flags & TB_WAKE_ON_CPU) && b->wake_ts >= b->block_ts;

	if (own && b->wake_ts <= now)
		end = b->wake_ts;
	COUNT(c, late_ends);
	if (filtered_out(b, end - b->block_ts, c))
		return;
	if (b->flags & TB_DEFER_USER) {
		b->flags &= ~TB_DEFER_USER;
		b->user_stack_id = -OFFWAKE_ERR_NOT_TRACED;
	}
	if (!cfg.sched_frames) {
		COUNT(c, kernel_stack_not_traced);
		kern = -OFFWAKE_ERR_NOT_TRACED;
	}
	finish_block(cur, b, end, kern, own, OFFWAKE_WAKER_NONE, 0, c);
	if (own)
		clear_waker(b);
}

/* prev (== current) is being switched out: it ran, so whatever it left open is settled first. */
static __always_inline void switch_out(void *ctx, struct task_struct *prev, _Bool preempt, __u32 prev_state,
				       __u64 now)
{
	struct offwake_counters *c = cpu_counters();
	struct offwake_task_block *b;
	int blocks;

	b = bpf_task_storage_get(&task_blocks, prev, 0, 0);
	if (b) {
		/* Still in the system call its parked block was in: the user registers are those. */
		if (b->flags & TB_PENDING)
			emit_pending(b, current_user_stack(ctx, scratch_slot(SLOT_SWITCH), c), c);
		if (b->block_ts)
			end_missed_block(prev, b, now, c);
	}
	/* A preempted task stays runnable whatever its state says; a task that had a signal
	 * pending arrives here as TASK_RUNNING (0). */
	blocks = !preempt && state_wanted(prev_state) && task_wanted(prev);
	if (blocks && cfg.filter_cgroup && bpf_current_task_under_cgroup(&target_cgroup, 0) != 1)
		blocks = 0;
	if (!blocks) {
		if (b) {
			clear_waker(b);
			/* A block not recorded (--state, the filters) is still the latest one. */
			if (chains() && !preempt && (prev_state & (OFFWAKE_STATE_INTERRUPTIBLE | OFFWAKE_STATE_UNINTERRUPTIBLE))) {
				b->last.hops = 0;
				b->last.end = OFFWAKE_CHAIN_END_UNSEEN;
			}
		}
		return;
	}
	if (!b) {
		b = task_block_create(prev);
		if (!b) {
			COUNT(c, storage_failed_blocks);
			return;
		}
	}
	/* Only a wakeup that came on the way in belongs to this block; any other is stale. */
	if (!(b->flags & TB_WAKE_ON_CPU))
		clear_waker(b);
	b->state = prev_state;
	if (cfg.sched_frames)
		b->kern_stack_id = current_stack(ctx, 0, OFFWAKE_KERNEL, scratch_slot(SLOT_SWITCH), c);
	b->flags &= ~TB_DEFER_USER;
	if (prev->flags & PF_NO_USER_STACK) {
		b->user_stack_id = OFFWAKE_NO_STACK;
	} else if (lazy() && cfg.user_task_work && !(b->flags & TB_LAST_KEPT)) {
		/* The user registers stay as they are until the task is back in user space,
		 * whether it entered the kernel by a system call or an exception. A task whose
		 * last block was kept has its stack walked now instead: walking it later, cold,
		 * from another task's context, costs more than walking it here. */
		b->flags |= TB_DEFER_USER;
	} else {
		struct pt_regs *regs =
			lazy() && !(b->flags & TB_LAST_KEPT) ? (struct pt_regs *)bpf_task_pt_regs(prev) : 0;

		/* orig_ax is the system call number inside one, -1 in an exception or interrupt. */
		if (regs && (long)regs->orig_ax >= 0)
			b->flags |= TB_DEFER_USER;
		else
			b->user_stack_id = current_user_stack(ctx, scratch_slot(SLOT_SWITCH), c);
	}
	/* Last: a block_ts != 0 tells the other programs the rest is filled in. */
	b->block_ts = now;
}

/* next is switched in: if it was blocked, its off-CPU interval ends now. */
static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	struct offwake_counters *c;
	struct offwake_task_block *b;
	__s64 kern;

	b = bpf_task_storage_get(&task_blocks, next, 0, 0);
	if (!b)
		return;
	if (!b->block_ts) {
		/* A wakeup of a block we did not see start (it began before the recording, or was
		 * filtered) is used up by this switch-in: it must not name the waker of a later block. */
		clear_waker(b);
		return;
	}
	c = cpu_counters();
	if (now < b->block_ts)
		now = b->block_ts;
	if (filtered_out(b, now - b->block_ts, c))
		return;
	kern = cfg.sched_frames ? b->kern_stack_id : sleeping_kernel_stack(next, scratch_slot(SLOT_SWITCH), c);
	finish_block(next, b, now, kern, waker_of_block(b), OFFWAKE_WAKER_NONE, 1, c);
	clear_waker(b); /* used up by this switch-in */
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offwake_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0, *last;

	if (stopped(now))
		return 0;
	last = bpf_map_lookup_elem(&cpu_current, &zero);
	if (last) {
		if (*last && *last != (__u32)prev->pid) {
			struct offwake_counters *c = cpu_counters();

			COUNT(c, untraced_switches);
		}
		*last = next->pid;
	}
	/* The idle task (pid 0) never blocks and has no task storage. */
	if (prev->pid)
		switch_out(ctx, prev, preempt, prev_state, now);
	if (next->pid)
		switch_in(next, now);
	return 0;
}

/* Whether p, being woken, is blocked at all: a task still on its run queue (not a delayed
 * dequeue) was only about to sleep, and the kernel just marks it running again. */
static __always_inline int wakee_blocked(struct task_struct *p)
{
	if (!p->on_rq)
		return 1;
	if (bpf_core_field_exists(p->se.sched_delayed) && p->se.sched_delayed)
		return 1;
	return 0;
}

/* Runs in the context of whoever wakes p (try_to_wake_up), before p can run again. The
 * waking that ends a block is the last one before p's switch-in, so a later waking simply
 * overwrites an earlier one; switch-in consumes it. It can also come while p is still on its
 * way into the scheduler (already dequeued, not yet switched out): then it belongs to the
 * block that switch-out is about to start (TB_WAKE_ON_CPU). */
SEC("tp_btf/sched_waking")
int BPF_PROG(offwake_waking, struct task_struct *p)
{
	struct offwake_counters *c;
	struct task_struct *cur;
	struct offwake_task_block *b;
	__u64 now, so_far;
	__u32 irq, on_cpu;
	int early;

	if (!task_wanted(p) || stopped(bpf_ktime_get_ns()))
		return 0;
	c = cpu_counters();
	if (!wakee_blocked(p)) {
		COUNT(c, runnable_wakeups);
		return 0;
	}
	on_cpu = p->on_cpu;
	b = on_cpu ? task_block_create(p) : bpf_task_storage_get(&task_blocks, p, 0, 0);
	if (!b) {
		if (on_cpu)
			COUNT(c, storage_failed_wakeups);
		return 0; /* asleep, but not in a block we track */
	}
	if (!on_cpu && !b->block_ts) {
		clear_waker(b);
		return 0;
	}
	now = bpf_ktime_get_ns();
	so_far = on_cpu ? 0 : now - b->block_ts;
	/* Lazily, a block already past --max-block is dropped whatever follows: nothing to record.
	 * One shorter than --min-block so far is usually dropped too, but may yet reach it on the
	 * run queue: it gets the waker's name and thread, which cost a few loads, not its stacks,
	 * which cost microseconds (and the waker's context is gone by the time we know). */
	early = lazy() && so_far < cfg.min_block_ns;
	if (lazy() && !early && !duration_kept(so_far))
		return 0;

	irq = irq_context();
	b->waker_kern_stack_id = early ? OFFWAKE_NO_STACK
				       : current_stack(ctx, 0, OFFWAKE_KERNEL, scratch_slot(SLOT_WAKING), c);
	if (irq & OFFWAKE_WAKER_IRQ_MASK) {
		/* The interrupted task did not wake anyone: name the context, not the task. */
		b->waker_flags = irq;
		b->waker_tgid = 0;
		b->waker_tid = 0;
		b->waker_ident = 0;
		b->waker_user_stack_id = OFFWAKE_NO_STACK;
		if (irq == OFFWAKE_WAKER_HARDIRQ)
			__builtin_memcpy(b->waker_comm, "[hardirq]\0\0\0\0\0\0", OFFWAKE_COMM_LEN);
		else if (irq == OFFWAKE_WAKER_SOFTIRQ)
			__builtin_memcpy(b->waker_comm, "[softirq]\0\0\0\0\0\0", OFFWAKE_COMM_LEN);
		else
			__builtin_memcpy(b->waker_comm, "[nmi]\0\0\0\0\0\0\0\0\0\0", OFFWAKE_COMM_LEN);
		if (!early)
			COUNT(c, irq_wakeups);
		if (chains()) {
			b->chain.hops = 0;
			b->chain.end = OFFWAKE_CHAIN_END_IRQ;
		}
	} else {
		__u64 pid_tgid = bpf_get_current_pid_tgid();

		cur = bpf_get_current_task_btf();
		b->waker_tgid = pid_tgid >> 32;
		b->waker_tid = (__u32)pid_tgid;
		b->waker_ident = task_ident(cur);
		__builtin_memcpy(b->waker_comm, cur->comm, sizeof(b->waker_comm));
		b->waker_flags = irq; /* 0, or IRQ_UNKNOWN */
		if (cur->flags & PF_KTHREAD) {
			b->waker_flags |= OFFWAKE_WAKER_KTHREAD;
			b->waker_user_stack_id = OFFWAKE_NO_STACK;
		} else {
			b->waker_user_stack_id =
				early ? OFFWAKE_NO_STACK : current_user_stack(ctx, scratch_slot(SLOT_WAKING), c);
		}
		if (chains()) {
			if (early) {
				/* The waker's own chain is a copy per hop: not for blocks mostly dropped. */
				b->chain.hops = 0;
				b->chain.end = OFFWAKE_CHAIN_END_NO_WAKER;
			} else {
				take_chain(b, cur);
			}
		}
	}
	if (early)
		b->waker_flags |= OFFWAKE_WAKER_EARLY;
	b->wake_ts = now;
	b->flags = (b->flags & ~TB_WAKE_ON_CPU) | TB_WAKER | (on_cpu ? TB_WAKE_ON_CPU : 0);
	if (!early)
		COUNT(c, wakeups);
	return 0;
}

/* Lazy capture with task work: runs in the task's own context on its way back to user space,
 * with its user registers as they were when it blocked. A parked block gets its user stack.
 * Preemptible (migration disabled): the walk uses this thread's own scratch space. */
static int user_work_run(struct bpf_map *map, void *key, void *value)
{
	struct user_work *w = value;
	struct task_struct *cur = bpf_get_current_task_btf();
	struct offwake_task_block *b;
	struct offwake_counters *c;

	b = bpf_task_storage_get(&task_blocks, cur, 0, 0);
	if (!b || !(b->flags & TB_PENDING))
		return 0;
	c = cpu_counters();
	emit_pending(b, user_stack_of(0, cur, 0, &w->s, c), c);
	return 0;
}

/* Lazy capture without task work: a task returns from a system call with its user registers
 * as they were when it blocked inside it. A parked block gets its user stack here. */
SEC("tp_btf/sys_exit")
int BPF_PROG(offwake_sys_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *cur;
	struct offwake_counters *c;
	struct offwake_task_block *b;

	if (!parked)
		return 0;
	cur = bpf_get_current_task_btf();
	b = bpf_task_storage_get(&task_blocks, cur, 0, 0);
	if (!b || !(b->flags & TB_PENDING))
		return 0;
	c = cpu_counters();
	emit_pending(b, current_user_stack(ctx, scratch_slot(SLOT_SYSCALL), c), c);
	return 0;
}

/* Lazy capture only: after an exec the user registers are the new program's. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(offwake_exec, struct task_struct *p)
{
	struct offwake_counters *c;
	struct offwake_task_block *b;

	b = bpf_task_storage_get(&task_blocks, p, 0, 0);
	if (!b || !(b->flags & (TB_PENDING | TB_DEFER_USER)))
		return 0;
	c = cpu_counters();
	if (b->flags & TB_PENDING) {
		COUNT(c, user_stack_exec);
		emit_pending(b, -OFFWAKE_ERR_EXEC, c);
	}
	if (b->flags & TB_DEFER_USER) {
		COUNT(c, user_stack_exec);
		b->flags &= ~TB_DEFER_USER;
		b->user_stack_id = -OFFWAKE_ERR_EXEC;
	}
	return 0;
}

/* With follow_forks, a child process of a target becomes a target (autoloaded only then). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(offwake_fork, struct task_struct *parent, struct task_struct *child)
{
	struct offwake_counters *c = cpu_counters();
	__u32 ptgid = parent->tgid;
	__u32 ctgid = child->tgid;
	__u8 one = 1;

	if (!cfg.filter_tgids || ptgid == ctgid || !bpf_map_lookup_elem(&target_tgids, &ptgid))
		return 0;
	if (bpf_map_update_elem(&target_tgids, &ctgid, &one, BPF_ANY) == 0)
		COUNT(c, forks_followed);
	else
		COUNT(c, forks_not_followed);
	return 0;
}

/* A thread exits (p is current). With task work, a block still parked gets its user stack
 * now (the task work would be cancelled with its entry), and the thread's entry goes. With a
 * target set, a process that is gone leaves it: its pid may name another one later. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offwake_exit, struct task_struct *p, _Bool group_dead)
{
	struct offwake_counters *c;
	struct offwake_task_block *b;
	__u32 tgid = p->tgid, tid = p->pid;

	if (cfg.user_task_work && bpf_map_lookup_elem(&user_works, &tid)) {
		b = bpf_task_storage_get(&task_blocks, p, 0, 0);
		if (b && (b->flags & TB_PENDING)) {
			c = cpu_counters();
			emit_pending(b, current_user_stack(ctx, scratch_slot(SLOT_SYSCALL), c), c);
		}
		bpf_map_delete_elem(&user_works, &tid);
	}
	if (!cfg.filter_tgids || !group_dead)
		return 0;
	if (bpf_map_delete_elem(&target_tgids, &tgid) == 0) {
		c = cpu_counters();
		COUNT(c, targets_exited);
	}
	return 0;
}


struct bpf_iter_meta;
struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/* Run once over every task after the recording stopped, sleepable, so that it can read the
 * user stacks of tasks that are not running. A parked block gets its user stack.
 * A block that started during the recording and had not ended is counted up to the stop,
 * with its waker if it was already woken (runnable, not yet switched in), else as
 * OFFWAKE_WAKER_STILL_BLOCKED. The filters compare the length so far, a lower bound: already
 * longer than --max-block, it is dropped; shorter than --min-block so far, it is dropped too
 * (it may have gone on longer): both counted in still_blocked_filtered. */
SEC("iter.s/task")
int offwake_end_blocks(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct offwake_counters *c;
	struct offwake_task_block *b;
	__s64 kern;

	if (!task || !stop_ns)
		return 0;
	b = bpf_task_storage_get(&task_blocks, task, 0, 0);
	if (!b)
		return 0;
	c = cpu_counters();
	/* Not back in user space yet: its user registers are still those of the block. */
	if (b->flags & TB_PENDING)
		emit_pending(b, user_stack_of(ctx, task, 1, scratch_slot(SLOT_OTHER), c), c);
	if (!b->block_ts || b->block_ts > stop_ns)
		return 0;
	if (filtered_out(b, stop_ns - b->block_ts, c)) {
		COUNT(c, still_blocked_filtered);
		return 0;
	}
	COUNT(c, still_blocked);
	if (b->flags & TB_DEFER_USER) {
		b->flags &= ~TB_DEFER_USER;
		b->user_stack_id = user_stack_of(ctx, task, 1, scratch_slot(SLOT_OTHER), c);
	}
	kern = cfg.sched_frames ? b->kern_stack_id : sleeping_kernel_stack(task, scratch_slot(SLOT_OTHER), c);
	finish_block(task, b, stop_ns, kern, waker_of_block(b), OFFWAKE_WAKER_STILL_BLOCKED, 0, c);
	clear_waker(b);
	return 0;
}
