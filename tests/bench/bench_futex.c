/* Overhead benchmark: THREADS threads (default 64) take turns on one futex word, a shared
 * counter. Thread i runs when counter % THREADS == i: it increments the counter, wakes the
 * next thread and waits again. One op is one turn: one block and one wakeup.
 *
 * The wakeup is addressed with the futex bitset (FUTEX_WAIT_BITSET/FUTEX_WAKE_BITSET on the
 * same word): a plain FUTEX_WAKE of one waiter would wake an arbitrary one, and waking all
 * would make every op 63 blocks. A bitset has 32 bits, so threads i and i+32 share one; the
 * kernel wakes equal-priority waiters in FIFO order, which picks the right one (it has
 * waited 32 turns longer), and a thread woken for its partner's turn passes the wakeup on.
 *   bench_futex [-n OPS] [-t THREADS]
 * Prints: futex threads=T ops=N ns_per_op=X wakeups_per_op=W */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_common.h"

static _Atomic unsigned turn; /* the futex word */
static unsigned total, nthreads;
static _Atomic long wakeups;
static pthread_barrier_t start_line;

static long futex_bitset(int op, unsigned val, int nr_wake, unsigned bitset)
{
	/* FUTEX_WAIT_BITSET reads val; FUTEX_WAKE_BITSET reads the count in the same slot. */
	return syscall(SYS_futex, &turn, op | FUTEX_PRIVATE_FLAG, op == FUTEX_WAIT_BITSET ? val : (unsigned)nr_wake,
		       NULL, NULL, bitset);
}

static unsigned bit_of(unsigned thread)
{
	return 1u << (thread % 32);
}

static void *player(void *arg)
{
	unsigned me = (unsigned)(long)arg, t;
	long woken = 0;
	int was_woken = 0;

	pthread_barrier_wait(&start_line);
	for (;;) {
		t = atomic_load_explicit(&turn, memory_order_acquire);
		if (t >= total)
			break;
		if (t % nthreads == me) {
			/* Only the thread whose turn it is writes the counter. */
			atomic_store_explicit(&turn, t + 1, memory_order_release);
			if (t + 1 >= total)
				futex_bitset(FUTEX_WAKE_BITSET, 0, INT_MAX, FUTEX_BITSET_MATCH_ANY);
			else
				futex_bitset(FUTEX_WAKE_BITSET, 0, 1, bit_of((t + 1) % nthreads));
			was_woken = 0;
			continue;
		}
		/* Woken for the thread that shares our bit: hand the wakeup to it. */
		if (was_woken && bit_of(t % nthreads) == bit_of(me))
			futex_bitset(FUTEX_WAKE_BITSET, 0, 1, bit_of(me));
		/* Sleeps only if the counter is still t; returns 0 when woken. */
		was_woken = futex_bitset(FUTEX_WAIT_BITSET, t, 0, bit_of(me)) == 0;
		woken += was_woken;
	}
	atomic_fetch_add(&wakeups, woken);
	return NULL;
}

int main(int argc, char **argv)
{
	long ops = 100000, threads = 64, i;
	pthread_t *tids;
	uint64_t start, elapsed;

	bench_parse_args(argc, argv, &ops, &threads);
	if (ops <= 0 || ops >= UINT_MAX || threads < 2 || threads > 1024)
		return 1;
	total = (unsigned)ops;
	nthreads = (unsigned)threads;
	tids = calloc(nthreads, sizeof(*tids));
	pthread_barrier_init(&start_line, NULL, nthreads + 1);
	for (i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, player, (void *)i) != 0)
			return 1;
	pthread_barrier_wait(&start_line);
	start = bench_now_ns();
	for (i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	elapsed = bench_now_ns() - start;
	printf("futex threads=%ld ops=%ld ns_per_op=%.0f wakeups_per_op=%.3f\n", threads, ops,
	       (double)elapsed / ops, (double)atomic_load(&wakeups) / ops);
	return 0;
}
