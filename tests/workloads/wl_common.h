/* Shared by the test workloads: an inline syscall, so that the named function that blocks
 * is the user leaf (glibc's wrappers have no frame pointer and would hide their caller),
 * a monotonic clock, and the "truth" line the tests parse:
 *
 *   truth tid=T function=F blocked_ns=N count=C waker_tid=W waker_function=G
 *
 * blocked_ns sums CLOCK_MONOTONIC around each blocking call that blocked; count counts them.
 * waker_tid=0 with waker_function=[hardirq] means an interrupt (a timer) woke the thread. */
#ifndef WL_COMMON_H
#define WL_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WL_NOINLINE __attribute__((noinline, used))

static inline __attribute__((always_inline)) long wl_syscall4(long nr, long a1, long a2, long a3,
                                                              long a4)
{
	long ret;
	register long r10 __asm__("r10") = a4;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

static inline uint64_t wl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int wl_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

/* A plain sleep for the waking side; its stack does not matter. */
static inline void wl_pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static inline void wl_print_truth(int tid, const char *function, uint64_t blocked_ns, long count,
				  int waker_tid, const char *waker_function)
{
	printf("truth tid=%d function=%s blocked_ns=%llu count=%ld waker_tid=%d waker_function=%s\n",
	       tid, function, (unsigned long long)blocked_ns, count, waker_tid, waker_function);
	fflush(stdout);
}

/* "-n COUNT -m MILLISECONDS" */
static inline void wl_parse_args(int argc, char **argv, long *count, long *ms)
{
	int i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (argv[i][0] == '-' && argv[i][1] == 'n')
			*count = atol(argv[i + 1]);
		else if (argv[i][0] == '-' && argv[i][1] == 'm')
			*ms = atol(argv[i + 1]);
	}
}

#endif /* WL_COMMON_H */
