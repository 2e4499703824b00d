/* Many aggregation keys for the stop-time benchmark: THREADS walker threads (default 2) walk
 * 2^DEPTH distinct user call paths (default 2^17 = 131072) and block once at the end of each.
 * A path is a recursion DEPTH calls deep that calls go_left() or go_right() at each level by
 * one bit of the path number, so every path has its own user stack. Walker k takes the paths
 * k, k + THREADS, ...; as the aggregation key holds the thread, each path gives one key.
 *
 * At the end of a path the walker writes a byte to its echo thread and blocks reading the
 * answer (the echo thread is the waker, with one stack). Both system calls are issued inline,
 * so that the last go_*() is the user leaf and the last level counts too. A short nanosleep
 * would not do: on this machine a 1 us timer often fires before the thread is switched out,
 * and a timer waker's stack is wherever the interrupt landed.
 *   bench_keys [-d DEPTH] [-t THREADS]
 * Prints: keys paths=N threads=T ns_per_path=X */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_common.h"
#include "wl_common.h"

static int depth = 17;
static long nthreads = 2;

long go_left(unsigned long path, int level);
long go_right(unsigned long path, int level);

struct walker {
	long first;        /* first path number */
	int request[2];    /* walker -> echo thread */
	int answer[2];     /* echo thread -> walker */
	pthread_t walk, echo;
};

static __thread struct walker *self;

/* Blocks until the echo thread answers. */
static inline __attribute__((always_inline)) long ask_and_wait(void)
{
	char c = 'k';

	if (wl_syscall4(SYS_write, self->request[1], (long)&c, 1, 0) != 1 ||
	    wl_syscall4(SYS_read, self->answer[0], (long)&c, 1, 0) != 1)
		exit(2);
	return c;
}

/* level counts the go_*() frames on the stack, this one included. */
WL_NOINLINE long go_left(unsigned long path, int level)
{
	long r;

	if (level == depth)
		r = ask_and_wait();
	else if ((path >> level) & 1)
		r = go_right(path, level + 1);
	else
		r = go_left(path, level + 1);
	return r + 1; /* not a tail call: this frame stays on the stack */
}

WL_NOINLINE long go_right(unsigned long path, int level)
{
	long r;

	if (level == depth)
		r = ask_and_wait();
	else if ((path >> level) & 1)
		r = go_right(path, level + 1);
	else
		r = go_left(path, level + 1);
	return r + 2;
}

static void *walk(void *arg)
{
	unsigned long path, paths = 1ul << depth;

	self = arg;
	for (path = (unsigned long)self->first; path < paths; path += (unsigned long)nthreads) {
		if (path & 1)
			go_right(path, 1);
		else
			go_left(path, 1);
	}
	close(self->request[1]);
	return NULL;
}

/* Answers every byte until the walker closes its end. */
static void *echo(void *arg)
{
	struct walker *w = arg;
	char c;

	while (read(w->request[0], &c, 1) == 1)
		if (write(w->answer[1], &c, 1) != 1)
			exit(3);
	return NULL;
}

int main(int argc, char **argv)
{
	long d = depth, i, unused = 0;
	struct walker walkers[64];
	uint64_t start;

	for (i = 1; i + 1 < argc; i += 2)
		if (strcmp(argv[i], "-d") == 0)
			d = atol(argv[i + 1]);
	bench_parse_args(argc, argv, &unused, &nthreads);
	if (d < 1 || d > 30 || nthreads < 1 || nthreads > 64)
		return 1;
	depth = (int)d;
	start = bench_now_ns();
	for (i = 0; i < nthreads; i++) {
		walkers[i].first = i;
		if (pipe(walkers[i].request) != 0 || pipe(walkers[i].answer) != 0 ||
		    pthread_create(&walkers[i].echo, NULL, echo, &walkers[i]) != 0 ||
		    pthread_create(&walkers[i].walk, NULL, walk, &walkers[i]) != 0)
			return 1;
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(walkers[i].walk, NULL);
		pthread_join(walkers[i].echo, NULL);
	}
	printf("keys paths=%lu threads=%ld ns_per_path=%.0f\n", 1ul << depth, nthreads,
	       (double)(bench_now_ns() - start) / (double)(1ul << depth));
	return 0;
}
