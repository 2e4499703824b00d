/* SPDX-License-Identifier: GPL-2.0 */
/* What offwake's BPF programs share: the read-only configuration, every map, the globals
 * that user space writes or reads, and the helpers that get at them. */
#ifndef OFFWAKE_MAPS_BPF_H
#define OFFWAKE_MAPS_BPF_H

#include <linux/errno.h>

#include "kernel_types.bpf.h"

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

/* --switch-output: the aggregates of the next window while user space reads and empties the
 * previous one's map. agg_window says which map the programs add to (bit 0: 0 aggregates, 1
 * aggregates_next); user space flips it at a switch. A program that adds to a map counts itself
 * in window_busy (per CPU: the programs run with migration disabled) before it reads
 * agg_window and until it is done with the map's element, so that user space, once it has
 * flipped, waits until no CPU counts a program on the old window before it reads and deletes
 * its elements. Sized like aggregates by the loader; one entry without --switch-output. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(key_size, sizeof(struct offwake_key));
	__type(value, struct offwake_value);
	__uint(max_entries, 16384);
} aggregates_next SEC(".maps");

const volatile __u32 switch_windows = 0; /* set by the loader for --switch-output */
__u32 agg_window = 0;

/* Changed before each change to the map unwind_processes (unwind_tables.bpf.h) that a thread
 * living now could see: by user space before it publishes a process's tables, by the exec
 * program before it deletes them. While it stays as it was, no process's tables have changed,
 * and a remembered walk need not look its process's up to know they are the same
 * (walk_memo.bpf.h). A fork's copy for its new process changes nothing a living thread had. */
__u32 unwind_tables_epoch = 0;

/* Changed by user space after it emptied the stack store of stacks that no window's samples
 * used (--switch-output, when the store is half full: StackTraceMap::end_window()). A memo
 * that remembered a stored id before then checks that the id is still stored before it
 * replays it (stored_id_current(), stacks.bpf.h). */
__u32 stack_store_epoch = 0;

struct window_busy {
	__s64 programs[2]; /* programs adding to window 0 and 1 on this CPU now */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct window_busy);
	__uint(max_entries, 1);
} window_busy SEC(".maps");

/* Timeline mode only. The loader sizes it (a power-of-2 number of pages); in aggregated mode
 * it is one page, and the cfg.timeline branch that writes it is dead code for the verifier. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

/* Short names for the task_block.flags bits. */
#define TB_WAKER OFFWAKE_TB_WAKER
#define TB_WAKE_ON_CPU OFFWAKE_TB_WAKE_ON_CPU
#define TB_DEFER_USER OFFWAKE_TB_DEFER_USER
#define TB_PENDING OFFWAKE_TB_PENDING
#define TB_PARKED OFFWAKE_TB_PARKED
#define TB_HAS_TABLES OFFWAKE_TB_HAS_TABLES

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offwake_task_block);
} task_blocks SEC(".maps");

/* Filled by the loader after load, before attach; grown by follow_forks, pruned at exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1024);
} target_tgids SEC(".maps");

/* -t's threads, filled by the loader after load, before attach. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1);
} target_tids SEC(".maps");

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
#define WALK_READ 2048 /* bytes of user stack a walk reads at once (at most to the end of its page) */
#define WINDOW 8192    /* bytes of user stack in the window: a replay reads its walk's span, up
                        * to this, at once (read_span(), walk_memo.bpf.h). A power of 2. */
/* The words of a user stack that a walk read, in order: where (from the sp it started from)
 * and what, for the thread's memo of the walk (walk_memo.bpf.h). A walk that reads more is
 * not remembered. Two words a frame at most (its return address, the saved rbp), three for a
 * signal frame. A power of 2. */
#define WALK_MEMO_WORDS 64
struct walk_words {
	__u64 sp0; /* the sp the walk started from */
	__u64 at;  /* the address of the word being noted */
	__u32 n;   /* words read, the first WALK_MEMO_WORDS of them below */
	__u32 span; /* bytes from sp0 to the end of the highest word read */
	__u32 off[WALK_MEMO_WORDS];
	__u64 val[WALK_MEMO_WORDS];
};

struct scratch {
	struct offwake_stored_stack st;
	__u64 win_start;
	__u64 win_len;
	__u8 window[WINDOW + 16];
	struct walk_words read; /* what the last walk in this slot read (stack_read.bpf.h) */
	__u64 kernel_sp;        /* where a kernel stack starts (kernel_memo.bpf.h) */
	__u8 code[8];           /* the bytes before a return address (user_stack.bpf.h, follows_call) */
	/* A user walk's rdi as the thread entered the kernel, for a first frame whose return
	 * address is there (OFFWAKE_UNWIND_RA_RDI), and whether the walk took it (user_stack.bpf.h):
	 * here, not in the walk's state, which lies on a stack already at the verifier's limit. */
	__u64 first_di;
	__u32 reg_frames;
};
enum { SLOT_SWITCH, SLOT_WAKING, SLOT_SYSCALL, SLOT_RETURN, SLOT_OTHER, NR_SLOTS };

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
 * a stop taken after those would count every open block too long by that much. */
__u64 stop_ns = 0;

/* Per CPU, as offwake_switch last saw it:
 * - tid: the task it switched to. A switch-out of another task means switches went by
 *   untraced: on some platforms (seen on a paravirtualised guest) the kernel runs no BPF
 *   program while certain tasks are current, nor in interrupts taken on them.
 * - parked_tid: that task, if its block was parked for its user stack (TB_PARKED) as it was
 *   switched in, else 0. A block is parked only there, and its task gets it back on its way to
 *   user space on this CPU, or is switched out first (which emits it): so the programs on that
 *   way (rseq_update, sys_exit), which run on every return of every task, have nothing to do
 *   for a task switched in traced that this does not name, and no task storage to look up. */
struct cpu_current {
	__u32 tid;
	__u32 parked_tid;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct cpu_current);
	__uint(max_entries, 1);
} cpu_current SEC(".maps");

static __always_inline struct cpu_current *this_cpu_current(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_current, &zero);
}

static __always_inline struct offwake_counters *cpu_counters(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

/* Counters are best effort: a CPU whose counters cannot be had still records. */
#define COUNT(c, field) do { if (c) (c)->field++; } while (0)

static __always_inline struct scratch *scratch_slot(__u32 slot)
{
	return bpf_map_lookup_elem(&scratch, &slot);
}

/* Which per-CPU cache of unwind rules (unwind_tables.bpf.h) a walk in scratch slot `slot`
 * may use: 1 + its index, 0 none. A cache serves programs that never run nested in each
 * other or in themselves on one CPU: the switch and waking programs share one (each runs
 * with interrupts off), rseq_update's has its own (it runs with interrupts on, so a wakeup in
 * an interrupt can run the waking program inside it, but never itself: it runs with
 * preemption off). sys_exit's program, preemptible, and the others use none. */
static __always_inline __u32 unwind_cache_for(__u32 slot)
{
	if (slot == SLOT_SWITCH || slot == SLOT_WAKING)
		return 1;
	return slot == SLOT_RETURN ? 2 : 0;
}

/* The element of `key` in the hash map `map`, inserted as a copy of `init` if it has none.
 * Another CPU may insert the same key between the lookup and the insert; its element is then
 * used, so `init` must be a state both can start from (zeros that each adds to atomically).
 * NULL if the map is full or out of memory. */
static __always_inline void *map_lookup_or_insert(void *map, const void *key, const void *init)
{
	void *v = bpf_map_lookup_elem(map, key);
	long err;

	if (v)
		return v;
	err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	if (err && err != -EEXIST)
		return NULL;
	return bpf_map_lookup_elem(map, key);
}

/* A task's storage in task_blocks, or NULL if it has none. */
static __always_inline struct offwake_task_block *task_block(struct task_struct *t)
{
	return bpf_task_storage_get(&task_blocks, t, 0, 0);
}

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

#endif /* OFFWAKE_MAPS_BPF_H */
