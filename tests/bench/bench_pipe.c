/* Overhead benchmark: a parent and a child process bounce one byte over two pipes. One op is
 * one one-way transfer: the reader blocks in read() and the writer's write() wakes it, so
 * every op is one block and one wakeup. Plain glibc read()/write(), as ordinary programs
 * call them (glibc's wrappers have no frame pointer).
 *
 * Both processes run on one CPU (-c CPU, default 0) as SCHED_BATCH, which the scheduler does
 * not preempt on wakeup: the writer goes on into its read() and blocks there, and only then
 * does the woken reader run. Otherwise only every other op blocks (measured here: 0.5
 * voluntary switches per op), on two CPUs because the woken side often answers before the
 * writer sleeps, on one CPU because the woken reader preempts the writer. -c -1: neither.
 *   bench_pipe [-n OPS] [-c CPU]
 * Prints: pipe ops=N ns_per_op=X */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

/* Reads a byte and sends it back until the parent closes its end. */
static void echo_child(int in, int out)
{
	char c;

	while (read(in, &c, 1) == 1)
		if (write(out, &c, 1) != 1)
			_exit(3);
	_exit(0);
}

int main(int argc, char **argv)
{
	long ops = 100000, round_trips, i, cpu = 0;
	int to_child[2], to_parent[2], status;
	uint64_t start, elapsed;
	char c = 'x';
	pid_t child;

	bench_parse_args(argc, argv, &ops, NULL);
	for (i = 1; i + 1 < argc; i += 2)
		if (strcmp(argv[i], "-c") == 0)
			cpu = atol(argv[i + 1]);
	if (cpu >= 0) { /* the child inherits both */
		struct sched_param param = { 0 };
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((int)cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0 || sched_setscheduler(0, SCHED_BATCH, &param) != 0)
			return 1;
	}
	round_trips = (ops + 1) / 2;
	ops = 2 * round_trips;
	if (pipe(to_child) != 0 || pipe(to_parent) != 0)
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		echo_child(to_child[0], to_parent[1]);
	}
	close(to_child[0]);
	close(to_parent[1]);
	start = bench_now_ns();
	for (i = 0; i < round_trips; i++) {
		if (write(to_child[1], &c, 1) != 1 || read(to_parent[0], &c, 1) != 1)
			return 2;
	}
	elapsed = bench_now_ns() - start;
	close(to_child[1]);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 1;
	printf("pipe ops=%ld ns_per_op=%.0f\n", ops, (double)elapsed / ops);
	return 0;
}
