/* SPDX-License-Identifier: GPL-2.0 */
/* A thread's last kernel stack, remembered so that the next one from the same place is
 * checked rather than unwound again (stacks.bpf.h): the kernel's unwinder costs microseconds
 * a stack (about 5 us on this kind of virtual machine, two thirds of the exact mode's BPF time
 * on pgbench), a check a fraction of that.
 *
 * A kernel stack's frames are return addresses that lie in the thread's own kernel stack, in
 * order, above where the stack starts: the sp the task saved when it was switched out (a
 * blocked thread), or the tracepoint's arguments in the kernel's frame (a waker). So after an
 * unwind, each frame is looked for in that memory, the first match above the previous one,
 * and where every frame was found, the memo keeps the start, the frames and their places. The
 * next stack of that thread and role whose memory holds every remembered frame at its place
 * is the remembered one: the same calls, returning to the same code, at the same depths. "Its
 * place" is its distance from the start, but for the outermost frame, which may be at its
 * address instead: a system call's stack starts at a random offset (randomize_kstack_offset)
 * that do_syscall_64 leaves below its own frame, so only the entry frame above it keeps its
 * address (kstack_memo_check). What the check does not see is a frame whose size changed
 * while every return address stayed where it was: the unwinder would then read another
 * place. A frame the unwinder reports that is not in the stack's memory as it is (a return
 * address that ftrace or a kretprobe replaced) is not found, and that stack is not
 * remembered. A memo of a stored stack that user space emptied since (--switch-output) is a
 * miss (stored_id_current(), stacks.bpf.h). --check-replays (cfg.check_replays) unwinds every
 * replayed stack as well and
 * counts those that differ: none on pgbench (167,887 replays in 5 s of the exact mode, 18,918
 * at --sample-period 1000) nor in tests/e2e/walk_memo_test.cpp, which fails on one.
 *
 * Memos per thread and role (MEMO_BLOCKED: its blocked stack, taken as it is switched back
 * in; MEMO_WAKER: its stack as it wakes another), KMEMO_SITES of each, chosen by the user pc
 * the thread entered the kernel from, each of MEMO_WAYS stacks, in task storage, 16 KiB a
 * thread. Two ways, not one: on pgbench at --sample-period 1000, 18% of kernel stacks were
 * unwound with one stack a site, 6 to 7% with two (each unwind about 10 us here). Eight sites,
 * not the four of user walks: a PostgreSQL backend enters the kernel to block or wake from
 * more places than four sites hold apart, and an unwind costs 10 to 30 us on this kind of
 * machine where a check costs under one: at --sample-period 1000, 0.36 and 0.30 stacks of
 * tasks a transaction were unwound with four sites, 0.08 and 0.09 with eight (two rounds,
 * alternated, 2026-12-04; the rest, 0.10, were wakers in interrupts, since remembered per
 * CPU: interrupt_kernel_stack). A stack deeper than KMEMO_FRAMES frames
 * or KMEMO_WORDS words is not remembered. */
#ifndef OFFWAKE_KERNEL_MEMO_BPF_H
#define OFFWAKE_KERNEL_MEMO_BPF_H

#include <bpf/bpf_core_read.h>

#include "irq.bpf.h"
#include "stacks.bpf.h"
#include "walk_memo.bpf.h"

#define KMEMO_FRAMES 48
#define KMEMO_SITE_BITS 3
#define KMEMO_SITES (1 << KMEMO_SITE_BITS)
#define KMEMO_WORDS 512 /* 4 KiB of kernel stack above the start */

struct kstack_memo {
	__u64 sp;       /* where the stack started: a blocked thread's saved sp, a waker's
	                 * tracepoint arguments */
	__s64 stack_id; /* the stored stack */
	__u32 n;        /* its frames; 0: nothing remembered */
	__u32 words;    /* words from sp to the outermost frame's, inclusive */
	__u32 store_epoch; /* stack_store_epoch when it was unwound (kstack_window) */
	__u16 at[KMEMO_FRAMES]; /* each frame's place, in words above sp */
	__u64 ip[KMEMO_FRAMES];
};

/* The stacks remembered per role and site (MEMO_WAYS, walk_memo.bpf.h). */
struct kstack_memo_set {
	struct kstack_memo way[MEMO_WAYS];
	__u32 newest; /* the way last replayed or remembered */
};

/* Memos per role and site (memo_site_of(), walk_memo.bpf.h). */
struct kstack_memos {
	struct kstack_memo_set m[MEMO_ROLES][KMEMO_SITES];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kstack_memos);
} kstack_memos SEC(".maps");

/* Kernel stack memory, per CPU and scratch slot (SLOT_*): where the stack starts, how many
 * words from there are readable, and those read at once to place an unwind's frames (a
 * check reads its words in place, or from here without bpf_rdonly_cast()). */
struct kstack_window {
	__u64 sp;
	__u32 avail;
	__u32 irq_stack; /* the words are this CPU's interrupt stack, up to its outermost frame */
	__u32 store_epoch; /* stack_store_epoch before the stack is checked or unwound: what a
	                    * memo of its unwind keeps (stored_id_current(), stacks.bpf.h) */
	__u32 interrupt_below; /* a waker's (waker_window): an interrupt's entry is below, on
	                        * this CPU's interrupt stack; or its own stack, or one whose top
	                        * is not known */
	__u64 outermost;   /* a waker's on the interrupt stack: its outermost word; 0 if not known */
	__u64 w[KMEMO_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct kstack_window);
	__uint(max_entries, NR_SLOTS);
} kstack_windows SEC(".maps");

/* Words of t's kernel stack from sp to its top (at most KMEMO_WORDS); 0 if sp is not in it
 * (an interrupt's stack, for one). `s`: a scratch slot of this CPU's, for kernel_address(). */
static __always_inline __u32 kstack_words_above(struct task_struct *t, __u64 sp, struct scratch *s)
{
	__u64 base = kernel_address(s, t->stack), words;

	if (!base || sp < base || sp >= base + KERNEL_STACK_SIZE || (sp & 7))
		return 0;
	words = (base + KERNEL_STACK_SIZE - sp) / 8;
	return words > KMEMO_WORDS ? KMEMO_WORDS : (__u32)words;
}

/* t's memos for `role` at the site it entered the kernel from, created if `create`. */
static __always_inline struct kstack_memo_set *kstack_memo_of(struct task_struct *t, __u32 role, int create)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	__u32 site = regs ? memo_site_of(regs_ip(regs), KMEMO_SITE_BITS) : 0;
	struct kstack_memos *memos =
		bpf_task_storage_get(&kstack_memos, t, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);

	if (!memos)
		return 0;
	barrier_var(memos); /* checked before the element's address is taken */
	return &memos->m[role & 1][site & (KMEMO_SITES - 1)];
}

struct kstack_check {
	const struct kstack_memo *m;
	const struct kstack_window *win;
	__s64 shift;       /* words from this stack's start to the remembered one's */
	__u64 words;       /* words of the stack the check may read */
	__u32 outermost;   /* the last frame's index */
	__u32 in_place;    /* the words are read where they are (kernel_word), not from win->w */
};

/* Word `at` of the stack being checked, `at` < k->words: read in place, one guarded load,
 * where the kernel has bpf_rdonly_cast(); else from the window, read whole before. */
static __always_inline __u64 kstack_check_word(const struct kstack_check *k, __u64 at)
{
	if (k->in_place)
		return kernel_word(k->win->sp + at * 8);
	return at < KMEMO_WORDS ? k->win->w[at] : 0;
}

/* Whether frame i (< KMEMO_FRAMES) of the memo is where it was (kstack_memo_check). */
static __always_inline int kstack_frame_in_place(const struct kstack_check *k, __u32 i)
{
	__u64 at, ip;

	if (i >= KMEMO_FRAMES)
		return 0;
	at = k->m->at[i];
	ip = k->m->ip[i];
	if (at < k->words && kstack_check_word(k, at) == ip)
		return 1;
	/* Only the outermost frame may lie above the random gap: at its own address. */
	if (i == k->outermost) {
		at += k->shift;
		if (at < k->words && kstack_check_word(k, at) == ip)
			return 1;
	}
	return 0;
}

/* The remembered stack, if memo `m`'s frames are all in the kernel stack that starts at
 * win->sp (win->avail words of it readable), each where it was: at the same distance from the
 * start, but for the outermost, which may be at the same address instead. A system call's
 * kernel stack starts at a random offset (Linux's randomize_kstack_offset): do_syscall_64
 * makes room for it below its own frame, so a blocked thread's sp differs from one call to
 * the next while every frame below the gap keeps its distance from the start, and the entry
 * frame above it, the outermost, its address. On pgbench, every replay but 20 in 130,000 had
 * its gap there or none; more frames allowed above it (as before), a memo could match
 * stale frames of an earlier call left in this call's gap, which nobody writes. Else -1. A
 * global function, verified once. */
__noinline __s64 kstack_memo_check(struct kstack_memo *m, struct kstack_window *win)
{
	struct kstack_check k = {};
	__u32 n, words, i;
	__s64 shift, need;

	if (!m || !win)
		return -1;
	n = m->n;
	words = m->words;
	if (!n || n > KMEMO_FRAMES || !words || words > KMEMO_WORDS || (m->sp & 7) || (win->sp & 7))
		return -1;
	shift = (__s64)(m->sp >> 3) - (__s64)(win->sp >> 3);
	/* Another stack altogether (a memo of interrupts, per CPU, checked on another thread's
	 * stack): every frame at its distance. */
	if (shift <= -KMEMO_WORDS || shift >= KMEMO_WORDS)
		shift = 0;
	need = shift > 0 ? words + shift : words;
	if (need > win->avail)
		need = win->avail;
	if (need <= 0 || need > KMEMO_WORDS)
		return -1;
	/* A check reads one word a frame: each in place costs a load, where copying the stack
	 * up to the outermost frame first (a helper call, some KiB) cost more than the check. */
	k.in_place = bpf_rdonly_cast != 0;
	if (!k.in_place && bpf_probe_read_kernel(win->w, need * 8, (void *)win->sp))
		return -1;
	k.m = m;
	k.win = win;
	k.outermost = n - 1;
	k.shift = shift;
	k.words = need;
	/* A loop without a call in it: under the mitigations of this kind of machine (retpolines,
	 * safe RET), a bpf_loop() step's call and return cost more than a frame's check. */
	for (i = 0; i < KMEMO_FRAMES; i++) {
		if (i >= n)
			break;
		if (!kstack_frame_in_place(&k, i))
			return -1;
	}
	if (!stored_id_current(m->stack_id, &m->store_epoch))
		return -1;
	return m->stack_id;
}

struct kstack_find {
	struct kstack_memo *m;
	const struct kstack_window *win;
	const __u64 *ips;
	__u32 n, words, found;
	__u32 next; /* the next word to look at */
};

/* Words looked at per bpf_loop step: the step's call costs more than a comparison. A word at a
 * step, the search cost 2.4 us a stack (waker stacks on pgbench), 1.0 us at 8. */
#define KMEMO_FIND_STRIDE 8

/* From word k->next of the window, up to KMEMO_FIND_STRIDE words: the first that holds the
 * next frame places it, and the next step starts after it. A step that places a frame looks
 * at fewer words, so the search takes at most words / KMEMO_FIND_STRIDE + frames steps. */
static long kstack_find_words(__u32 i, void *data)
{
	struct kstack_find *k = data;
	__u32 f = k->found, j = k->next;
	__u64 want;

	if (f >= k->n || f >= KMEMO_FRAMES)
		return 1;
	want = k->ips[f];
	for (int u = 0; u < KMEMO_FIND_STRIDE; u++, j++) {
		if (j >= k->words || j >= KMEMO_WORDS)
			return 1;
		if (k->win->w[j] == want) {
			k->m->at[f] = j;
			k->m->ip[f] = want;
			k->m->words = j + 1;
			k->found = f + 1;
			k->next = j + 1;
			return f + 1 >= k->n;
		}
	}
	k->next = j;
	return 0;
}

/* Places the frames in s->st (the first KMEMO_FRAMES), leaf first, in the kernel stack that
 * starts at win->sp (win->avail words of it readable): each at the first word above the
 * previous one's that holds it, into memo `m` (its at[], ip[] and words; not its n). Returns
 * how many frames, from the first, were placed: all of them in a stack that lies in those
 * words, fewer where the unwind went on to another stack. A global function, verified once. */
__noinline __u32 kstack_place(struct kstack_memo *m, struct kstack_window *win, const struct scratch *s)
{
	struct kstack_find k = {};
	__u32 n, avail;

	if (!m || !win || !s)
		return 0;
	n = s->st.nr;
	if (n > KMEMO_FRAMES)
		n = KMEMO_FRAMES; /* the first ones only */
	avail = win->avail;
	if (!n || !avail || avail > KMEMO_WORDS)
		return 0;
	if (bpf_probe_read_kernel(win->w, avail * 8, (void *)win->sp))
		return 0;
	k.m = m;
	k.win = win;
	k.ips = s->st.ips;
	k.n = n;
	k.words = avail;
	bpf_loop(avail / KMEMO_FIND_STRIDE + n + 1, kstack_find_words, &k, 0);
	return k.found;
}

/* After an unwind of the frames in s->st (stored as `id`, or failed: id < 0) of a stack
 * starting at win->sp: memo `m` remembers it if every frame is placed in its words
 * (kstack_place), else forgets what it had. */
static __always_inline int kstack_memo_keep(struct kstack_memo *m, struct kstack_window *win, const struct scratch *s,
					    __s64 id)
{
	__u32 n;

	m->n = 0;
	n = s->st.nr;
	if (id < 0 || !n || n > KMEMO_FRAMES || kstack_place(m, win, s) != n)
		return 0;
	m->sp = win->sp;
	m->stack_id = id;
	m->store_epoch = win->store_epoch;
	m->n = n;
	return 1;
}

/* The remembered stack of set `set` that the kernel stack at win->sp repeats (the newest way
 * first), which becomes the newest; else -1. A global function, verified once. */
__noinline __s64 kstack_memo_lookup(struct kstack_memo_set *set, struct kstack_window *win)
{
	__u32 way;
	__s64 id;

	if (!set || !win)
		return -1;
	way = memo_newest(set->newest);
	id = kstack_memo_check(&set->way[way], win);
	if (id >= 0)
		return id;
	way = memo_next_way(way);
	id = kstack_memo_check(&set->way[way], win);
	if (id >= 0)
		set->newest = way;
	return id;
}

/* After an unwind (kstack_memo_keep): remembered in the oldest way of `set`, which becomes
 * the newest. A global function, verified once. */
__noinline int kstack_memo_remember(struct kstack_memo_set *set, struct kstack_window *win, const struct scratch *s,
				    __s64 id)
{
	__u32 oldest;

	if (!set || !win || !s)
		return 0;
	oldest = memo_next_way(memo_newest(set->newest));
	if (!kstack_memo_keep(&set->way[oldest], win, s, id))
		return 0;
	set->newest = oldest;
	return 1;
}

/* --check-replays: a replayed stack `id` against the unwind of the same stack (`real`, stored
 * where an unwind stores it). */
static __always_inline void count_replay_check(struct offwake_counters *c, __s64 id, __s64 real)
{
	if (!c)
		return;
	c->kernel_replays_checked++;
	if (real != id)
		c->kernel_replays_wrong++;
}

/* The kernel stack of t, which is not running: its blocked stack (sleeping_kernel_stack),
 * checked against t's memo of its last one first. Scratch slot `slot` (SLOT_*). Straight
 * through, the failures left to the global functions: each branch here would multiply the
 * verifier's states of the switch program that inlines it. */
static __always_inline __s64 blocked_kernel_stack(struct task_struct *t, __u32 slot, struct offwake_counters *c)
{
	struct kstack_window *win = bpf_map_lookup_elem(&kstack_windows, &slot);
	struct kstack_memo_set *m = kstack_memo_of(t, MEMO_BLOCKED, 1);
	struct scratch *s;
	__s64 id;

	s = scratch_slot(slot);
	if (win && s) {
		win->sp = task_saved_sp(t);
		win->avail = kstack_words_above(t, win->sp, s);
		win->store_epoch = *(volatile __u32 *)&stack_store_epoch;
	}
	id = kstack_memo_lookup(m, win);
	if (id >= 0) {
		if (c) {
			c->stack_captures[OFFWAKE_KERNEL]++;
			c->kernel_stacks_replayed++;
		}
		if (cfg.check_replays)
			count_replay_check(c, id, sleeping_kernel_stack(t, s, 0));
		return id;
	}
	id = sleeping_kernel_stack(t, s, c);
	kstack_memo_remember(m, win, s, id);
	return id;
}

/* Memos of the kernel stacks of wakers in interrupts, per CPU, by site: the stack's depth
 * and outermost word, which tell one path from another (no random offset here, unlike a
 * system call's stack). Per CPU, not per thread: an interrupt comes in on any thread, and
 * where it came from user space, a per-thread memo's site, its user pc, is wherever that
 * thread was. `scratch`: where a stack unwound only for --check-replays is placed. */
#define IRQ_KMEMO_SITE_BITS 4
#define IRQ_KMEMO_SITES (1 << IRQ_KMEMO_SITE_BITS)

struct irq_kstack_memos {
	struct kstack_memo_set site[IRQ_KMEMO_SITES];
	struct kstack_memo scratch;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct irq_kstack_memos);
	__uint(max_entries, 1);
} irq_kstack_memos SEC(".maps");

/* The kernel stack of code in an interrupt, which starts at win->sp: unwound
 * (bpf_get_stack()), cut above its first entry stub (first_entry_stub: asm_sysvec_*,
 * asm_common_interrupt), its frames placed in win (kstack_place, into memo `m`), and stored.
 * `*placed`: how many frames were placed and stored, all of them, or 0 if not all: then the
 * stack is stored as unwound, and not remembered. Below the stub is what the interrupt came
 * in on, which woke no one: whatever this CPU was doing, the idle loop or any thread's system
 * call, or for an interrupt that nested, the softirq it interrupted. So the waker
 * ("[hardirq]", "[softirq]") is named by the interrupt's path alone, wherever it ran: on
 * this CPU's interrupt stack (one that came in kernel mode, or a softirq at its end), or on
 * the thread's own kernel stack (one from user space). Without the stubs' bounds, the stack
 * is cut where its placed frames end at the outermost word of the interrupt stack. A memo
 * replayed is then the same frames an unwind would keep: before the cut at the stub, a
 * timer interrupt nested in a softirq on the interrupt stack replayed the timer's memo
 * from user space (7 frames) where the unwind went on to the outer interrupt (13), the one
 * --check-replays difference in 1.2 million on pgbench. */
static __always_inline __s64 unwound_interrupt_stack(void *ctx, struct scratch *s, struct kstack_window *win,
						     struct kstack_memo *m, __u32 *placed, struct offwake_counters *c)
{
	long n = bpf_get_stack(ctx, s->st.ips, frames_to_bytes(), cfg.kernel_stack_skip & BPF_F_SKIP_FIELD_MASK);
	__u32 k, last;

	*placed = 0;
	if (n <= 0)
		return stack_error(n ? n : -EFAULT, OFFWAKE_KERNEL, c);
	s->st.nr = n / sizeof(__u64);
	k = first_entry_stub(s->st.ips, s->st.nr);
	if (k)
		s->st.nr = k;
	k = kstack_place(m, win, s);
	last = k - 1;
	if (k && k == s->st.nr)
		*placed = k;
	else if (k && win->irq_stack && last < KMEMO_FRAMES && m->at[last] + 1 == win->avail)
		*placed = s->st.nr = k;
	return store_stack(s, OFFWAKE_KERNEL, c);
}

/* The outermost word of the stack memory in `win` (its last of win->avail); 0 if none. */
static __always_inline __u64 window_outermost_word(const struct kstack_window *win)
{
	return win->avail ? kernel_word(win->sp + ((__u64)win->avail - 1) * 8) : 0;
}

/* A waker's kernel stack in an interrupt, from win->sp (win->avail words up to the top of
 * the stack it is on, whose outermost word is `outermost`): checked against this CPU's
 * memos of interrupts at that site first, else unwound, cut to the interrupt's frames and
 * remembered. On pgbench, a hard interrupt waking a task from the idle loop, unwound each
 * time, cost about 14 us. */
static __always_inline __s64 interrupt_kernel_stack(void *ctx, struct scratch *s, struct kstack_window *win,
						    __u64 outermost, struct offwake_counters *c)
{
	__u32 zero = 0, placed, way;
	struct irq_kstack_memos *memos = bpf_map_lookup_elem(&irq_kstack_memos, &zero);
	struct kstack_memo_set *set;
	struct kstack_memo *m;
	__s64 id;

	if (!memos)
		return current_stack(ctx, 0, OFFWAKE_KERNEL, s, c);
	set = &memos->site[memo_site_of(outermost ^ ((__u64)win->avail << 48), IRQ_KMEMO_SITE_BITS) &
			   (IRQ_KMEMO_SITES - 1)];
	COUNT(c, stack_captures[OFFWAKE_KERNEL]);
	id = kstack_memo_lookup(set, win);
	if (id >= 0) {
		COUNT(c, kernel_stacks_replayed);
		if (cfg.check_replays)
			count_replay_check(c, id, unwound_interrupt_stack(ctx, s, win, &memos->scratch, &placed, 0));
		return id;
	}
	way = memo_next_way(memo_newest(set->newest));
	m = &set->way[way];
	m->n = 0;
	id = unwound_interrupt_stack(ctx, s, win, m, &placed, c);
	if (id >= 0 && placed) {
		m->sp = win->sp;
		m->stack_id = id;
		m->store_epoch = win->store_epoch;
		m->n = placed;
		set->newest = way;
	}
	return id;
}

/* Where the current task's kernel stack starts, from a tp_btf program (the waking program: as
 * it wakes another), and what it lies on, found once a wakeup for both what follows: the
 * task's own stack, or this CPU's interrupt stack (irq_stack), whose outermost word tells
 * whether an interrupt's entry is below (interrupt_below). The window's words cover at most
 * KMEMO_WORDS (avail 0 beyond). `slot`: the scratch slot and window of this CPU's to use.
 * Null without them. */
static __always_inline struct kstack_window *waker_window(void *ctx, __u32 slot, struct task_struct *cur)
{
	struct scratch *s = scratch_slot(slot);
	struct kstack_window *win = bpf_map_lookup_elem(&kstack_windows, &slot);
	__u32 words;

	if (!s || !win)
		return 0;
	win->sp = kernel_address(s, ctx);
	win->avail = kstack_words_above(cur, win->sp, s);
	win->irq_stack = 0;
	win->interrupt_below = 1;
	win->outermost = 0;
	win->store_epoch = *(volatile __u32 *)&stack_store_epoch;
	if (!win->avail) {
		win->irq_stack = 1;
		words = irq_stack_words_above(win->sp, KERNEL_STACK_SIZE / 8);
		if (words) {
			win->outermost = kernel_word(win->sp + ((__u64)words - 1) * 8);
			win->interrupt_below = irq_stack_entered_by_interrupt(win->outermost);
		}
		win->avail = words <= KMEMO_WORDS ? words : 0;
	}
	return win;
}

/* Whether a wakeup in a softirq (irq_context()) is the current task's: a user task's, on this
 * CPU's interrupt stack with no interrupt's entry below (its own local_bh_enable(); see
 * offwake_softirq_is_tasks). On the task's own stack a softirq ran at the end of an interrupt
 * that came from user space, or in ksoftirqd; an interrupt stack whose top is not known (no
 * hardirq_stack_ptr in the kernel's BTF) is taken for an interrupt's, as before. `win`: the
 * wakeup's waker_window(). */
static __always_inline int softirq_is_currents(const struct kstack_window *win, struct task_struct *cur)
{
	return offwake_softirq_is_tasks(win->interrupt_below, !!(cur->flags & PF_KTHREAD));
}

/* The current task's kernel stack, from a tp_btf program (the waking program: as it wakes
 * another): checked against its memo of its last one first, else unwound (bpf_get_stack)
 * into the stack store and remembered. Where the stack starts is the program's context: the
 * tracepoint's arguments, which the kernel keeps in its own frame (the program's own frame
 * may be on a private stack of the CPU's): `win`, the wakeup's waker_window(). In an
 * interrupt (`irq`, irq_context()), or on this CPU's interrupt stack, the interrupt's own
 * frames (interrupt_kernel_stack); on any other stack (an exception's), bpf_get_stackid()'s
 * (current_stack). */
static __always_inline __s64 waker_kernel_stack(void *ctx, __u32 slot, struct kstack_window *win, __u32 irq,
						struct offwake_counters *c)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct scratch *s = scratch_slot(slot);
	struct kstack_memo_set *m;
	__s64 id;

	if (!s || !win)
		return current_stack(ctx, 0, OFFWAKE_KERNEL, s, c);
	if (win->irq_stack) {
		/* On this CPU's interrupt stack: a hard interrupt, or a softirq at its end, came in
		 * on what woke no one, and is remembered per CPU and cut there. A softirq there
		 * for a task's local_bh_enable() (do_softirq_own_stack: loopback networking) goes
		 * on into the waker's own path, the sender's system call: kept whole, unwound each
		 * time. */
		if (win->avail && ((irq & OFFWAKE_WAKER_HARDIRQ) || win->interrupt_below))
			return interrupt_kernel_stack(ctx, s, win, win->outermost, c);
		return current_stack(ctx, 0, OFFWAKE_KERNEL, s, c);
	}
	if (irq & OFFWAKE_WAKER_IRQ_MASK)
		return interrupt_kernel_stack(ctx, s, win, window_outermost_word(win), c);
	m = kstack_memo_of(cur, MEMO_WAKER, 1);
	COUNT(c, stack_captures[OFFWAKE_KERNEL]);
	id = kstack_memo_lookup(m, win);
	if (id >= 0) {
		COUNT(c, kernel_stacks_replayed);
		if (cfg.check_replays)
			count_replay_check(c, id, unwound_kernel_stack(ctx, s, 0));
		return id;
	}
	id = unwound_kernel_stack(ctx, s, c);
	kstack_memo_remember(m, win, s, id);
	return id;
}

#endif /* OFFWAKE_KERNEL_MEMO_BPF_H */
