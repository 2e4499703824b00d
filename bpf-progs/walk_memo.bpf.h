/* SPDX-License-Identifier: GPL-2.0 */
/* A thread's last user stack walk, remembered so that the next one from the same place can be
 * replayed rather than walked (user_stack.bpf.h).
 *
 * A walk is a function of the registers it starts from (pc, sp, bp), the rules of the
 * process's tables (named by their generation), and the words of the thread's stack it reads,
 * each at an address that the words before decide. So if a thread enters the kernel again
 * with the same registers and the same tables, and every word the last walk read still holds
 * the value it read, this walk would read the same words, find the same frames and end the
 * same way: its stack is the stored one. The tables are the same without a lookup while no
 * process's have changed since the walk (unwind_tables_epoch, maps.bpf.h). Checking that
 * costs the reads alone, not the rule of each frame nor storing the stack again (hashing and
 * comparing its frames). A thread blocks, and wakes others, from the same few places with the
 * same callers again and again: a server's worker waits for its next request in the same loop.
 * The stored id it replays must still be stored: with --switch-output, user space empties the
 * store of stacks no window used (stored_id_current(), stacks.bpf.h), and a memo of one is a
 * miss, walked again and stored again under its id.
 *
 * Memos per thread and role (where it blocks, where it wakes another), MEMO_SITES of each
 * chosen by the walk's first pc and sp (memo_site()), each of MEMO_WAYS walks, in task storage
 * (13.3 KiB a thread and role), for walks of the current task's stack only. On pgbench at
 * --sample-period 1000: 72% of walks were replays with one walk a site of four chosen by the
 * pc alone, 94% with two; 96.4% against 93.9% with the site chosen by pc and sp (2026-12-05);
 * with eight sites, not four, 0.01 walks a transaction of each role missed its memo, against
 * 0.15 to 0.29 of the blocked role's and 0.30 to 0.39 of the waker's with four (two runs each,
 * each walk about 8 us, a replay 1.5). A PostgreSQL backend blocks, and wakes others, from
 * more places than four sites hold apart. Only the thread's own programs use its memos, one
 * at a time: the switch program as it blocks, the waking program as it wakes another, the
 * task work or system call exit that walks its parked stack; none runs while another walks
 * that stack. Both functions are global, verified once on their own: inlined, their
 * branches doubled the states of the walk around them. */
#ifndef OFFWAKE_WALK_MEMO_BPF_H
#define OFFWAKE_WALK_MEMO_BPF_H

#include "stack_read.bpf.h"
#include "stacks.bpf.h"

enum walk_memo_role {
	MEMO_BLOCKED = 0, /* the thread's stack where it blocks */
	MEMO_WAKER = 1,   /* ... where it wakes another thread */
	MEMO_ROLES = 2,
	MEMO_NONE = 2,    /* a walk not remembered: another task's stack */
};

/* A walk: where it started, and what it found. */
struct walk_memo_head {
	__u64 pc, sp, bp;  /* the registers it started from */
	__s64 stack_id;    /* the stack it stored */
	__u32 tables;      /* the process's tables: their generation, or 0 if it had none */
	__u32 epoch;       /* unwind_tables_epoch (maps.bpf.h) as it was before `tables` was
	                    * looked up: while the epoch is the same, so are the tables */
	__u32 store_epoch; /* stack_store_epoch (maps.bpf.h) as it was before the stack was stored */
	__u32 words;       /* words it read; in a memo, 0: nothing remembered */
	__u16 end;         /* how it ended (OFFWAKE_WALK_*) */
	__u16 table_frames, fp_frames; /* its frames, by table and by frame pointer */
	__u16 tables_known; /* of a walk about to start: `tables` was looked up (else the epoch
	                     * alone can tell a memo's tables are its) */
};

struct walk_memo {
	struct walk_memo_head h;
	struct walk_words read; /* the words it read */
};

/* Memos per role, chosen by the user pc the thread entered the kernel from (a system call's
 * site): a thread that blocks, or wakes others, from a few places keeps one for each. The
 * site is one of 1 << bits, a hash of that pc (with the sp, for user walks: memo_site()): the
 * rule of user walks here (MEMO_SITES) and of kernel stacks (KMEMO_SITES, kernel_memo.bpf.h). */
static __always_inline __u32 memo_site_of(__u64 user_pc, __u32 bits)
{
	return (__u32)((user_pc * 0x9E3779B97F4A7C15ull) >> (64 - bits)) & ((1u << bits) - 1);
}

#define MEMO_SITE_BITS 3
#define MEMO_SITES (1 << MEMO_SITE_BITS)

/* A user walk's site: of its pc and sp, so that a thread that enters the kernel at one place
 * from more paths than MEMO_WAYS (a PostgreSQL backend's waits, at different depths) spreads
 * them over the sites. A path's sp is the same each time (the same frames above the thread's
 * stack), so a walk that repeats one is looked for where that one was kept. */
static __always_inline __u32 memo_site(__u64 user_pc, __u64 user_sp)
{
	return memo_site_of(user_pc ^ user_sp, MEMO_SITE_BITS);
}

/* Memos per role and site: the last MEMO_WAYS, the newest checked first and the oldest
 * replaced. A thread may enter the kernel from one place by two ways: a server's loop that
 * waits in one function called from two places (user walks), a send that wakes a reader
 * blocked in recv or one in epoll_wait (kernel stacks). The rule of user walks here and of
 * kernel stacks (kernel_memo.bpf.h). */
#define MEMO_WAYS 2

static __always_inline __u32 memo_newest(__u32 newest)
{
	return newest & (MEMO_WAYS - 1);
}

/* The way after `way`: the next to check, or with the newest, the oldest to replace. */
static __always_inline __u32 memo_next_way(__u32 way)
{
	return (way + 1) & (MEMO_WAYS - 1);
}

struct walk_memo_set {
	struct walk_memo way[MEMO_WAYS];
	__u32 newest; /* the way last replayed or remembered */
};

/* A thread's memos for one role, a map a role: each holds 13.3 KiB a thread, and a thread that
 * never wakes another has none of the waker's. */
struct walk_memos {
	struct walk_memo_set m[MEMO_SITES];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct walk_memos);
} walk_memos_blocked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct walk_memos);
} walk_memos_waker SEC(".maps");

/* The current task's memos for `role` (< MEMO_ROLES); `flags`: bpf_task_storage_get()'s. */
static __always_inline struct walk_memos *walk_memos_of(__u32 role, __u64 flags)
{
	struct task_struct *cur = bpf_get_current_task_btf();

	if (role == MEMO_WAKER)
		return bpf_task_storage_get(&walk_memos_waker, cur, 0, flags);
	return bpf_task_storage_get(&walk_memos_blocked, cur, 0, flags);
}

struct replay_ctx {
	struct walk_ctx w;          /* the reads: the scratch window and the stack's bounds */
	const struct walk_memo *m;  /* the memo replayed */
	__u64 sp0;                  /* the sp the walk starts from, which its words' offsets are from */
	__u32 differs;              /* a word differs, or could not be read */
};

/* One word of a memo: whether the stack still holds what the remembered walk read there. */
static long replay_word(__u32 i, void *data)
{
	struct replay_ctx *r = data;
	__u64 v;

	if (i >= WALK_MEMO_WORDS || stack_word(&r->w, r->sp0 + r->m->read.off[i], &v, 0, 0) ||
	    v != r->m->read.val[i]) {
		r->differs = 1;
		return 1;
	}
	return 0;
}

/* Whether s's window holds the `span` bytes of the current task's stack above `sp`, where the
 * words a walk from there read lie: read at once if it does not hold them yet and can. What a
 * read costs is mostly the first touch of the stack and the call: on pgbench at
 * --sample-period 1000 (2026-12-05, clock reads around each part), 8 bytes at the sp cost
 * 0.55 us on the way back to user space, the same 8 bytes again 0.17 us; a replay's words lay
 * over ~4 KiB of stack, which cost 0.81 us in one read, 0.91 us in three reads of only the
 * ranges that hold them (1 KiB in all), and about 1.6 us in the walk's windows (five reads,
 * a window a page). After a failed read the window is empty. */
static __always_inline int read_span(struct scratch *s, __u64 sp, __u32 span)
{
	if (!span || span > WINDOW)
		return 0;
	if (s->win_start == sp && s->win_len >= span)
		return 1;
	if (bpf_probe_read_user(s->window, span, (void *)sp)) {
		s->win_len = 0;
		return 0;
	}
	s->win_start = sp;
	s->win_len = span;
	return 1;
}

/* Whether every word memo m's walk read (n of them) holds the same value in s's window, which
 * holds the walk's span from its sp (read_span()). A loop without a call in it: under the
 * mitigations of this kind of machine (retpolines, safe RET), a bpf_loop() step's call and
 * return cost more than the comparison. Each offset lies within the span (note_word()): the
 * mask is for the verifier. */
static __always_inline int window_repeats(const struct scratch *s, const struct walk_memo *m, __u32 n)
{
	__u32 i;

	for (i = 0; i < WALK_MEMO_WORDS; i++) {
		if (i >= n)
			break;
		if (*(const __u64 *)&s->window[m->read.off[i] & (WINDOW - 1)] != m->read.val[i])
			return 0;
	}
	return 1;
}

/* What walk_memo_replay() returns for a memo of the same registers whose tables only a lookup
 * can tell (the epoch changed since): the caller looks them up and asks again. */
#define MEMO_TABLES_UNKNOWN (-2)

/* Whether memo m's walk started where `h` starts: the same registers and tables. Its tables are
 * the same if no process's have changed since (the same epoch) or, looked up, they are the same
 * generation. 0: not the same, MEMO_TABLES_UNKNOWN: the same registers, the tables not looked
 * up, 1: the same. */
static __always_inline int walk_memo_starts_as(const struct walk_memo *m, const struct walk_memo_head *h)
{
	if (m->h.pc != h->pc || m->h.sp != h->sp || m->h.bp != h->bp)
		return 0;
	if (m->h.epoch == h->epoch)
		return 1;
	if (!h->tables_known)
		return MEMO_TABLES_UNKNOWN;
	return m->h.tables == h->tables;
}

/* The stack of memo m, if the walk that `h` is about to start (pc, sp, bp, tables) from the
 * current task's registers repeats it: then `h` gets how that walk ended, its tables and its
 * frames, and m, found by its tables, the epoch of `h`. -1 if not; MEMO_TABLES_UNKNOWN if it
 * may, once `h` has its tables. `s`: the walk's scratch slot, `hi`: the top of the thread's
 * stack. A global function, verified once. */
__noinline __s64 walk_memo_replay_one(struct walk_memo *m, struct walk_memo_head *h, struct scratch *s, __u64 hi)
{
	struct replay_ctx r = {};
	__u32 n;
	int same;

	if (!m || !h || !s)
		return -1;
	n = m->h.words;
	if (!n || n > WALK_MEMO_WORDS)
		return -1;
	same = walk_memo_starts_as(m, h);
	if (same != 1)
		return same ? MEMO_TABLES_UNKNOWN : -1;
	r.w.s = s;
	r.w.sp = h->sp;
	r.sp0 = h->sp;
	r.w.hi = hi;
	r.m = m;
	if (read_span(s, h->sp, m->read.span))
		r.differs = !window_repeats(s, m, n);
	else
		bpf_loop(n, replay_word, &r, 0);
	if (r.differs || !stored_id_current(m->h.stack_id, &m->h.store_epoch))
		return -1;
	/* The tables were the memo's at that epoch: h's was read before they were looked up. */
	m->h.epoch = h->epoch;
	h->tables = m->h.tables;
	h->end = m->h.end;
	h->table_frames = m->h.table_frames;
	h->fp_frames = m->h.fp_frames;
	return m->h.stack_id;
}

/* The same against the task's memos for `role` at the walk's site: the newest first, then
 * the other, which becomes the newest if it is the one repeated. Two paths to one call with
 * the same registers (a function called from two places) differ only in their words: each
 * keeps its way. MEMO_TABLES_UNKNOWN if neither was repeated and one may be, once `h` has its
 * tables. */
__noinline __s64 walk_memo_replay(struct walk_memo_head *h, struct scratch *s, __u64 hi, __u32 role)
{
	struct walk_memos *memos;
	struct walk_memo_set *set;
	__u32 way;
	__s64 id, first;

	if (!h || !s || role >= MEMO_ROLES)
		return -1;
	memos = walk_memos_of(role, 0);
	if (!memos)
		return -1;
	set = &memos->m[memo_site(h->pc, h->sp)];
	way = memo_newest(set->newest);
	first = walk_memo_replay_one(&set->way[way], h, s, hi);
	if (first >= 0)
		return first;
	way = memo_next_way(way);
	id = walk_memo_replay_one(&set->way[way], h, s, hi);
	if (id >= 0)
		set->newest = way;
	else if (first == MEMO_TABLES_UNKNOWN)
		id = MEMO_TABLES_UNKNOWN;
	return id;
}

/* After the walk `h` of the current task's stack (s->read holds the words it read): the
 * task's memo for `role` remembers it in the site's oldest way, if it can be
 * replayed (it was stored, read no more words than a memo holds, and every read succeeded:
 * a page not present now may be later). Without memory for a memo, nothing is remembered. */
__noinline int walk_memo_keep(const struct walk_memo_head *h, const struct scratch *s, __u32 role)
{
	struct walk_memos *memos;
	struct walk_memo_set *set;
	struct walk_memo *m;
	__u32 way;

	if (!h || !s || role >= MEMO_ROLES)
		return 0;
	if (h->stack_id < 0 || h->words > WALK_MEMO_WORDS || h->end == OFFWAKE_WALK_UNREADABLE)
		return 0;
	memos = walk_memos_of(role, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!memos)
		return 0;
	set = &memos->m[memo_site(h->pc, h->sp)];
	way = memo_next_way(memo_newest(set->newest));
	m = &set->way[way];
	m->read = s->read;
	m->h = *h;
	set->newest = way;
	return 1;
}

#endif /* OFFWAKE_WALK_MEMO_BPF_H */
