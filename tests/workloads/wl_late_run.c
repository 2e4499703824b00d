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
 * With -u USECS the FIFO thread writes USECS after the main thread entered read() instead of
 * as soon as its nap ends (it spins for the rest), so that the wakeup comes at a known offset
 * into the block, e.g. just before --min-block.
 *   wl_late_run [-n COUNT] [-m MS] [-u USECS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include "wl_common.h"

static int fds[2];
static long count = 20, ms = 5, wake_us;
static volatile int waker_tid;
static volatile uint64_t read_at; /* when the main thread last entered wl_read_one */
static volatile long reads;        /* ... and how many times it did, after read_at is set */
static long impure_rounds;
static uint64_t impure_ns;

WL_NOINLINE uint64_t wl_wait_for_turn(int fd, long *blocks)
{
	struct rusage before, after;
	long counted = *blocks;
	uint64_t ns;

	getrusage(RUSAGE_THREAD, &before);
	read_at = wl_now_ns();
	__atomic_store_n(&reads, reads + 1, __ATOMIC_RELEASE);
	ns = wl_read_one(fd, blocks);
	getrusage(RUSAGE_THREAD, &after);
	if (ns && after.ru_nivcsw != before.ru_nivcsw) {
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

/* -u: until wake_us after the main thread entered this round's read(). Naps while it has not
 * got there yet (this thread holds the CPU they share whenever it runs), naps most of the
 * rest (SCHED_FIFO has no timer slack) and spins the last 100 us. */
static void wait_into_read(long round)
{
	struct timespec poll = { 0, 20000 };
	uint64_t target, now;

	while (__atomic_load_n(&reads, __ATOMIC_ACQUIRE) <= round)
		nanosleep(&poll, NULL);
	target = read_at + (uint64_t)wake_us * 1000;
	now = wl_now_ns();
	if (target > now + 100000) {
		struct timespec rest = { 0, (long)(target - now - 100000) };

		nanosleep(&rest, NULL);
	}
	while (wl_now_ns() < target)
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
		if (wake_us)
			wait_into_read(i);
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
	for (i = 1; i + 1 < argc; i += 2)
		if (strcmp(argv[i], "-u") == 0)
			wake_us = atol(argv[i + 1]);
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
