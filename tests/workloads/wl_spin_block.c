/* On-CPU and off-CPU in one process: the main thread alternates between burning the CPU in
 * wl_spin_for() and sleeping in wl_block_for() (a clock_nanosleep issued inline, so that
 * wl_block_for is the user leaf). Prints the truth of both:
 *   truth tid=T function=wl_block_for blocked_ns=N count=C waker_tid=0 waker_function=[hardirq]
 *   spin tid=T function=wl_spin_for on_cpu_ns=N   (the thread's CPU time in wl_spin_for, not
 *                                                  wall time: being preempted is not on-CPU)
 *   wl_spin_block [-n ROUNDS] [-m MS]  (each round spins MS and sleeps MS) */
#include "wl_common.h"

static volatile uint64_t sink;

/* CLOCK_MONOTONIC through the system call itself: the spin loop's own clock reads stay out of
 * the vDSO and the PLT, whose symbols readers name differently (perf's choice among the
 * overlapping symbols of a PLT depends on its internal tree). */
static uint64_t raw_now_ns(void)
{
	struct timespec ts;

	wl_syscall4(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0, 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

WL_NOINLINE void wl_spin_for(long ms)
{
	uint64_t end = raw_now_ns() + (uint64_t)ms * 1000000ull;

	/* Read the clock rarely, so that samples land in this function. */
	while (raw_now_ns() < end)
		for (int i = 0; i < 100000; i++)
			sink++;
}

WL_NOINLINE uint64_t wl_block_for(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	uint64_t t0 = raw_now_ns();

	wl_syscall4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)&ts, 0);
	return raw_now_ns() - t0;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	wl_syscall4(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (long)&ts, 0, 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long count = 20, ms = 20, blocks = 0, before, i;
	uint64_t blocked = 0, spin_start, spun = 0;

	wl_parse_args(argc, argv, &count, &ms);
	for (i = 0; i < count; i++) {
		spin_start = thread_cpu_ns();
		wl_spin_for(ms);
		spun += thread_cpu_ns() - spin_start;
		before = wl_blocks_so_far();
		blocked += wl_block_for(ms);
		blocks += wl_blocks_so_far() - before;
	}
	wl_print_truth(wl_gettid(), "wl_block_for", blocked, blocks, 0, "[hardirq]");
	printf("spin tid=%d function=wl_spin_for on_cpu_ns=%llu\n", wl_gettid(), (unsigned long long)spun);
	return 0;
}
