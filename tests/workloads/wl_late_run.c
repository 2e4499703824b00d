/* A block woken before --min-block that lasts longer only because its thread then waits on the
 * run queue. The main thread blocks COUNT times in wl_wait_for_turn on read() of a pipe. A
 * SCHED_FIFO thread on the same CPU sleeps 0.2 ms, writes one byte from wl_give_turn, and
 * then keeps the CPU for MS milliseconds, so the main thread, woken 0.2 ms into its block,
 * runs about MS later. Prints the truth line (the main thread's blocks, each measured from
 * read() to its return), with the FIFO thread as the waker. Needs CAP_SYS_NICE.
 * A round in which the main thread was also preempted (other load on its CPU) measured the
 * preemption as well: it is left out of the truth and printed on its own line,
 *   impure rounds=K blocked_ns=N
 * so that a reader knows the recorded time may exceed the truth by up to N.
 *   wl_late_run [-n COUNT] [-m MS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include "wl_common.h"

static int fds[2];
static long count = 20, ms = 5;
static volatile int waker_tid;
static long impure_rounds;
static uint64_t impure_ns;

WL_NOINLINE uint64_t wl_wait_for_turn(int fd, long *blocks)
{
	struct rusage before, after;
	long counted = *blocks;
	uint64_t ns;

	getrusage(RUSAGE_THREAD, &before);
	ns = wl_read_one(fd, blocks);
	getrusage(RUSAGE_THREAD, &after);
	if (ns && (after.ru_nivcsw != before.ru_nivcsw || after.ru_nvcsw == before.ru_nvcsw)) {
		*blocks = counted;
		impure_rounds++;
		impure_ns += ns;
		return 0;
	}
	return ns;
}

WL_NOINLINE void wl_give_turn(int fd)
{
	char c = 't';

	if (wl_syscall4(SYS_write, fd, (long)&c, 1, 0) != 1)
		exit(3);
}

static void hold_cpu_ms(long n)
{
	uint64_t end = wl_now_ns() + (uint64_t)n * 1000000ull;

	while (wl_now_ns() < end)
		;
}

static void *waker(void *arg)
{
	struct timespec nap = { 0, 200000 };
	long i;

	(void)arg;
	wl_become_fifo();
	waker_tid = wl_gettid();
	for (i = 0; i < count; i++) {
		nanosleep(&nap, NULL); /* the main thread gets the CPU, and blocks in read() */
		wl_give_turn(fds[1]);
		hold_cpu_ms(ms); /* ... and waits on the run queue meanwhile */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long blocks = 0, i;
	uint64_t blocked = 0;
	pthread_t t;

	wl_parse_args(argc, argv, &count, &ms);
	if (pipe(fds) != 0)
		return 1;
	wl_pin_to_this_cpu(); /* the waker thread too */
	if (pthread_create(&t, NULL, waker, NULL) != 0)
		return 1;
	for (i = 0; i < count; i++)
		blocked += wl_wait_for_turn(fds[0], &blocks);
	pthread_join(t, NULL);
	wl_print_truth(wl_gettid(), "wl_wait_for_turn", blocked, blocks, waker_tid, "wl_give_turn");
	printf("impure rounds=%ld blocked_ns=%llu\n", impure_rounds, (unsigned long long)impure_ns);
	return 0;
}
