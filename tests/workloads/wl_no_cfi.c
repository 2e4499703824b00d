/* A thread that blocks, and a thread that wakes it, each through a function without unwind
 * information between functions with it (wl_no_cfi_frames.c), for the walk by frame pointer
 * from a pc with no row (tests/e2e/complete_stacks_test.cpp). This file is built -O2
 * -fomit-frame-pointer, with CFI, as Debian builds most code:
 *
 *   main      nocfi_outer -> nocfi_middle (no CFI) -> COUNT times nocfi_wait -> read() on a
 *             pipe, which the poker writes;
 *   poker     nocfi_waker: each round, once main sleeps in its read, a pause of MS
 *             milliseconds, then nocfi_poke_middle (no CFI) -> nocfi_poke -> write().
 *
 *   usage: wl_no_cfi [-n COUNT] [-m MS] */
#define _GNU_SOURCE
#include <pthread.h>

#include "wl_common.h"

#define NOCFI_FUNCTION __attribute__((noipa, used))

uint64_t nocfi_middle(int fd, long rounds);
long nocfi_poke_middle(int fd, long round);

static long g_count = 10, g_ms = 10;
static int g_pipe[2];
static int g_pid, g_main_tid;
static _Atomic int g_poker_tid;
static _Atomic long g_reads;

NOCFI_FUNCTION uint64_t nocfi_wait(int fd)
{
	char c;
	uint64_t t0 = wl_now_ns();

	if (read(fd, &c, 1) != 1)
		exit(2);
	atomic_fetch_add(&g_reads, 1);
	return wl_now_ns() - t0;
}

NOCFI_FUNCTION uint64_t nocfi_outer(int fd, long rounds)
{
	uint64_t ns = nocfi_middle(fd, rounds);

	/* Work after the call, so that it is no tail call: the reads took more than 1 ns each. */
	return ns > (uint64_t)rounds ? ns : 0;
}

NOCFI_FUNCTION void nocfi_poke(int fd)
{
	if (write(fd, "p", 1) != 1)
		exit(3);
}

NOCFI_FUNCTION long nocfi_waker(void)
{
	long i, done = 0;

	for (i = 0; i < g_count; i++) {
		wl_await_count(&g_reads, i);
		wl_await_sleep(g_pid, g_main_tid, SYS_read, g_pipe[0]);
		wl_pause_ms(g_ms);
		done = nocfi_poke_middle(g_pipe[1], done);
	}
	return done;
}

static void *poker_thread(void *arg)
{
	(void)arg;
	atomic_store(&g_poker_tid, wl_gettid());
	return (void *)(uintptr_t)nocfi_waker();
}

int main(int argc, char **argv)
{
	pthread_t poker;
	uint64_t ns;

	wl_parse_args(argc, argv, &g_count, &g_ms);
	if (g_count < 1 || pipe(g_pipe) != 0)
		return 1;
	g_pid = getpid();
	g_main_tid = wl_gettid();
	if (pthread_create(&poker, NULL, poker_thread, NULL))
		return 1;
	ns = nocfi_outer(g_pipe[0], g_count);
	pthread_join(poker, NULL);
	wl_print_truth(g_main_tid, "nocfi_wait", ns, g_count, g_poker_tid, "nocfi_poke");
	return 0;
}
