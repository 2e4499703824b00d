/* Shared by the overhead benchmark workloads: a monotonic clock and "-n OPS -t THREADS". */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "-n OPS" and, where threads is not NULL, "-t THREADS"; anything else is ignored. */
static inline void bench_parse_args(int argc, char **argv, long *ops, long *threads)
{
	int i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-n") == 0)
			*ops = atol(argv[i + 1]);
		else if (threads && strcmp(argv[i], "-t") == 0)
			*threads = atol(argv[i + 1]);
	}
}

#endif /* BENCH_COMMON_H */
