/* Stacks that change with time, as a long-running host's do: PHASES phases of PHASE_MS
 * milliseconds each, one after the other, in which one thread sleeps MS milliseconds at a time
 * in phase_block (clock_nanosleep, woken by the hrtimer interrupt), reached through
 * phase_<p> (a function of its own for phase p) recursing 0 to STACKS-1 times, in turn. So
 * each phase blocks from STACKS user stacks of its own, and the run from PHASES * STACKS.
 * For the test of a stack store that --switch-output empties (tests/e2e/switch_output_test.cpp):
 * a store with room for a few phases' stacks but not for the run's must keep every window's.
 *
 * With -r, a second thread blocks the same way through phase_return, from one stack, in the
 * first phase and again in the last; in between it waits elsewhere (nanosleep through glibc,
 * from another place). Its stack is then the one its memos remembered before the store was
 * emptied of it: a replay must find it gone and walk it again.
 *
 *   truth tid=T function=phase_block blocked_ns=N count=K waker_tid=0 waker_function=[hardirq]
 *   truth tid=R function=phase_return ...                                  (with -r)
 *
 *   usage: wl_stack_phases [-r] [-p PHASES (1-16)] [-s STACKS (1-32)] [-m MS] [-t PHASE_MS] */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>

#include "wl_common.h"

static volatile uint64_t g_sink;

WL_NOINLINE uint64_t phase_block(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	uint64_t t0 = wl_now_ns();

	if (wl_syscall4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)&ts, 0) != 0)
		exit(2);
	return wl_now_ns() - t0;
}

/* Phase p's function: `depth` more calls of itself, then the block. The work after the call
 * keeps it from being a tail call. */
#define PHASE_FUNCTION(p)                                                              \
	WL_NOINLINE uint64_t phase_##p(long depth, long ms)                            \
	{                                                                              \
		uint64_t t = depth ? phase_##p(depth - 1, ms) : phase_block(ms);       \
                                                                                       \
		g_sink += t;                                                           \
		return t;                                                              \
	}
PHASE_FUNCTION(0) PHASE_FUNCTION(1) PHASE_FUNCTION(2) PHASE_FUNCTION(3)
PHASE_FUNCTION(4) PHASE_FUNCTION(5) PHASE_FUNCTION(6) PHASE_FUNCTION(7)
PHASE_FUNCTION(8) PHASE_FUNCTION(9) PHASE_FUNCTION(10) PHASE_FUNCTION(11)
PHASE_FUNCTION(12) PHASE_FUNCTION(13) PHASE_FUNCTION(14) PHASE_FUNCTION(15)

static uint64_t (*const phases[])(long, long) = {
	phase_0, phase_1, phase_2,  phase_3,  phase_4,  phase_5,  phase_6,  phase_7,
	phase_8, phase_9, phase_10, phase_11, phase_12, phase_13, phase_14, phase_15,
};

/* The phase the main thread is in, and whether it is done. */
static volatile long g_phase;
static volatile int g_done;
static long g_ms;

WL_NOINLINE uint64_t phase_return(long ms)
{
	uint64_t t = phase_block(ms);

	g_sink += t;
	return t;
}

/* The -r thread: phase_return while the main thread is in its first or last phase. */
static void *returner(void *arg)
{
	long last = *(long *)arg, count = 0;
	uint64_t blocked = 0;

	wl_prefault_stack();
	while (!g_done) {
		long p = g_phase;

		if (p == 0 || p == last) {
			long before = wl_blocks_so_far();

			blocked += phase_return(g_ms);
			count += wl_blocks_so_far() - before;
		} else {
			wl_pause_ms(20);
		}
	}
	wl_print_truth(wl_gettid(), "phase_return", blocked, count, 0, "[hardirq]");
	return NULL;
}

int main(int argc, char **argv)
{
	long nphases = 16, stacks = 8, ms = 2, phase_ms = 400, count = 0, p, i, last;
	uint64_t blocked = 0, end;
	pthread_t ret;
	int with_returner = 0;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-r"))
			with_returner = 1;
	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-r"))
			i--;
		else if (!strcmp(argv[i], "-p"))
			nphases = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "-s"))
			stacks = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "-m"))
			ms = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "-t"))
			phase_ms = atol(argv[i + 1]);
	}
	if (nphases < 1 || nphases > 16 || stacks < 1 || stacks > 32 || ms < 1 || phase_ms < 1)
		exit(1);
	g_ms = ms;
	last = nphases - 1;
	if (with_returner && pthread_create(&ret, NULL, returner, &last) != 0)
		exit(3);
	for (p = 0; p < nphases; p++) {
		g_phase = p;
		end = wl_now_ns() + (uint64_t)phase_ms * 1000000ull;
		for (i = 0; wl_now_ns() < end; i++) {
			long before = wl_blocks_so_far();

			blocked += phases[p](i % stacks, ms);
			count += wl_blocks_so_far() - before;
		}
	}
	g_done = 1;
	if (with_returner)
		pthread_join(ret, NULL);
	wl_print_truth(wl_gettid(), "phase_block", blocked, count, 0, "[hardirq]");
	return 0;
}
