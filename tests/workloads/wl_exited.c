/* A thread that exits long before the recording ends. The thread (named "wl_exited", after
 * its process) blocks COUNT times in exited_thread_waits on read() of a pipe, each time woken
 * by the main thread from main_wakes_thread after MS milliseconds; then, 10 * MS milliseconds
 * later, it wakes the main thread (blocked in main_waits_for_thread) from exited_thread_wakes,
 * and exits. (That one block is long so that the main thread's wait to run again while the
 * thread exits, a millisecond or two, is a small part of it.) The main
 * thread joins it and sleeps LINGER milliseconds more (-l, default 500) in
 * main_outlives_thread, so that the recording goes on long after the thread is gone. Prints
 * truth lines for both threads' blocks and the thread's identity line.
 *
 * Both threads share one CPU and the short-lived thread is SCHED_FIFO (so this needs root):
 * after it wakes the main thread, it runs on to its exit before the main thread runs again.
 * So the main thread's last block always ends after its waker is gone, and a waker sample
 * stamped with that end (rather than with the wakeup) names a dead thread, every time. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include "wl_common.h"

static long g_count = 10, g_ms = 10;
static int g_to_thread[2], g_to_main[2];
static _Atomic int g_thread_tid;
static uint64_t g_thread_blocked, g_thread_from, g_thread_to;
static long g_thread_blocks;

static inline __attribute__((always_inline)) void write_one(int fd)
{
	char c = 'w';

	if (wl_syscall4(SYS_write, fd, (long)&c, 1, 0) != 1)
		exit(3);
}

WL_NOINLINE uint64_t exited_thread_waits(long *blocks)
{
	return wl_read_one(g_to_thread[0], blocks);
}

WL_NOINLINE void exited_thread_wakes(void)
{
	write_one(g_to_main[1]);
}

WL_NOINLINE void main_wakes_thread(void)
{
	write_one(g_to_thread[1]);
}

WL_NOINLINE uint64_t main_waits_for_thread(long *blocks)
{
	return wl_read_one(g_to_main[0], blocks);
}

WL_NOINLINE uint64_t main_outlives_thread(long ms, long *blocks)
{
	return wl_block_ms(ms, blocks);
}

static void *short_lived(void *arg)
{
	long i;

	(void)arg;
	wl_prefault_stack();
	wl_become_fifo();
	atomic_store(&g_thread_tid, wl_gettid());
	g_thread_from = wl_now_ns();
	for (i = 0; i < g_count; i++)
		g_thread_blocked += exited_thread_waits(&g_thread_blocks);
	wl_pause_ms(10 * g_ms); /* the main thread is asleep in main_waits_for_thread by now */
	exited_thread_wakes();
	g_thread_to = wl_now_ns();
	return NULL;
}

int main(int argc, char **argv)
{
	long linger = 500, main_blocks = 0, linger_blocks = 0, i;
	uint64_t main_blocked;
	pthread_t t;

	wl_parse_args(argc, argv, &g_count, &g_ms);
	for (i = 1; i + 1 < argc; i++)
		if (argv[i][0] == '-' && argv[i][1] == 'l')
			linger = atol(argv[i + 1]);
	wl_pin_to_this_cpu();
	if (pipe(g_to_thread) != 0 || pipe(g_to_main) != 0)
		return 1;
	if (pthread_create(&t, NULL, short_lived, NULL) != 0)
		return 1;
	for (i = 0; i < g_count; i++) {
		wl_pause_ms(g_ms); /* the thread is asleep in exited_thread_waits by now */
		main_wakes_thread();
	}
	main_blocked = main_waits_for_thread(&main_blocks);
	if (pthread_join(t, NULL) != 0)
		return 1;
	wl_print_truth(g_thread_tid, "exited_thread_waits", g_thread_blocked, g_thread_blocks,
		       wl_gettid(), "main_wakes_thread");
	wl_print_truth(wl_gettid(), "main_waits_for_thread", main_blocked, main_blocks,
		       g_thread_tid, "exited_thread_wakes");
	wl_print_identity(g_thread_tid, "wl_exited", g_thread_from, g_thread_to);
	main_outlives_thread(linger, &linger_blocks);
	return 0;
}
