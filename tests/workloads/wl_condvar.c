/* Two threads of one process: the waiter blocks COUNT times in wl_wait_for_signal on a
 * condition variable; the signaller sleeps MS milliseconds, then wakes it from
 * wl_send_signal.
 *
 * The condition variable is a futex word used the way glibc's condvar uses it, with the
 * FUTEX_WAIT and FUTEX_WAKE syscalls issued inline, so that wl_wait_for_signal and
 * wl_send_signal are the user leaves of the blocked and waker stacks. With --pthread it
 * uses pthread_cond_wait/pthread_cond_signal instead: then glibc (no frame pointers) sits
 * between the named functions and the kernel, and the unwinder may miss them. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "wl_common.h"

static long g_count = 20, g_ms = 20;
static int g_use_pthread;

static _Atomic unsigned int g_seq; /* the futex word: bumped by every signal */
static _Atomic int g_waiter_tid, g_waker_tid;
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static unsigned int g_pseq; /* pthread mode: guarded by g_mutex */

/* Blocks until g_seq moves past `seen`; returns the time blocked in calls that slept. */
WL_NOINLINE uint64_t wl_wait_for_signal(unsigned int seen, long *blocks)
{
	uint64_t blocked = 0;

	if (g_use_pthread) {
		pthread_mutex_lock(&g_mutex);
		while (g_pseq == seen) {
			long before = wl_blocks_so_far();
			uint64_t t0 = wl_now_ns();

			pthread_cond_wait(&g_cond, &g_mutex);
			blocked += wl_blocked_since(t0, before, blocks);
		}
		pthread_mutex_unlock(&g_mutex);
		return blocked;
	}
	while (atomic_load(&g_seq) == seen) {
		long before = wl_blocks_so_far();
		uint64_t t0 = wl_now_ns();

		wl_syscall4(SYS_futex, (long)&g_seq, FUTEX_WAIT_PRIVATE, seen, 0);
		blocked += wl_blocked_since(t0, before, blocks);
	}
	return blocked;
}

WL_NOINLINE void wl_send_signal(void)
{
	if (g_use_pthread) {
		pthread_mutex_lock(&g_mutex);
		++g_pseq;
		pthread_cond_signal(&g_cond);
		pthread_mutex_unlock(&g_mutex);
		return;
	}
	atomic_fetch_add(&g_seq, 1);
	wl_syscall4(SYS_futex, (long)&g_seq, FUTEX_WAKE_PRIVATE, 1, 0);
}

static void *signaller(void *arg)
{
	long i;

	(void)arg;
	atomic_store(&g_waker_tid, wl_gettid());
	for (i = 0; i < g_count; i++) {
		wl_pause_ms(g_ms); /* the waiter is asleep by now */
		wl_send_signal();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t blocked = 0;
	long blocks = 0, i;
	pthread_t t;

	wl_parse_args(argc, argv, &g_count, &g_ms);
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--pthread") == 0)
			g_use_pthread = 1;
	atomic_store(&g_waiter_tid, wl_gettid());
	if (pthread_create(&t, NULL, signaller, NULL) != 0)
		return 1;
	for (i = 0; i < g_count; i++) {
		unsigned int seen = (unsigned int)i; /* the signaller has sent i signals */

		blocked += wl_wait_for_signal(seen, &blocks);
	}
	pthread_join(t, NULL);
	wl_print_truth(g_waiter_tid, "wl_wait_for_signal", blocked, blocks, g_waker_tid,
		       "wl_send_signal");
	return 0;
}
