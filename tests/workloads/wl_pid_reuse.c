/* Pid reuse, for the blocked side and the waker side. The parent starts wl_reuse_first, which
 * gets some pid P; it blocks COUNT times for MS milliseconds in first_child_waits and, after
 * each, wakes the parent (blocked in parent_waits_for_first on read() of a pipe) from
 * first_child_wakes; then it exits. Once it is reaped, the parent starts wl_reuse_second with
 * the same pid P (clone3 with set_tid: needs CAP_SYS_ADMIN), which does the same in
 * second_child_waits and second_child_wakes while the parent waits in parent_waits_for_second.
 * The two children are different non-PIE binaries whose code overlaps in address (see
 * wl_reuse.c). The children print their own truth and identity lines; the parent prints
 * one truth line per child, naming P and the child's waking function as its waker.
 *
 * All share one CPU and the children are SCHED_FIFO (root is needed anyway): after a child's
 * last wakeup of the parent, the child runs on to its exit before the parent runs again. So
 * the parent's last block of each half always ends after its waker is gone (and, for the
 * first child, before its pid is reused), deterministically.
 *
 * Each child first writes a "ready" byte from main (not a wakeup the tests look at), which the
 * parent reads before it starts timing: otherwise the child, SCHED_FIFO, could preempt the
 * parent between its clock reading and its read(), and the parent's measure would include
 * time it spent runnable rather than blocked. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h> /* struct clone_args */
#include <signal.h>
#include <sys/wait.h>

#include "wl_common.h"

WL_NOINLINE uint64_t parent_waits_for_first(int fd, long *blocks)
{
	return wl_read_one(fd, blocks);
}

WL_NOINLINE uint64_t parent_waits_for_second(int fd, long *blocks)
{
	return wl_read_one(fd, blocks);
}

/* Starts NAME (beside this executable) with pid PID (0: any), its fd 3 the pipe's write end. */
static pid_t spawn(const char *name, pid_t pid, int wfd, char **argv)
{
	struct clone_args args;
	pid_t set_tid[1] = { pid };
	char path[4096];
	long r;

	wl_sibling(path, sizeof path, name);
	memset(&args, 0, sizeof args);
	args.exit_signal = SIGCHLD;
	if (pid) {
		args.set_tid = (uint64_t)(uintptr_t)set_tid;
		args.set_tid_size = 1;
	}
	r = syscall(SYS_clone3, &args, sizeof args);
	if (r < 0) {
		fprintf(stderr, "wl_pid_reuse: clone3 of %s with pid %d: %m\n", name, (int)pid);
		exit(5);
	}
	if (r == 0) {
		wl_become_fifo(); /* kept across execv */
		if (dup2(wfd, 3) != 3)
			_exit(126);
		argv[0] = path;
		execv(path, argv);
		_exit(127);
	}
	return (pid_t)r;
}

static void wait_ready(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1 || c != 'r')
		exit(6);
}

static void reap(pid_t child)
{
	int status;

	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "wl_pid_reuse: child %d failed\n", (int)child);
		exit(6);
	}
}

int main(int argc, char **argv)
{
	long count = 10, ms = 10, blocks1 = 0, blocks2 = 0, i;
	uint64_t blocked1 = 0, blocked2 = 0;
	int fds[2];
	pid_t first, second;

	wl_parse_args(argc, argv, &count, &ms);
	wl_pin_to_this_cpu();
	if (pipe2(fds, O_CLOEXEC) != 0)
		return 1;
	first = spawn("wl_reuse_first", 0, fds[1], argv);
	wait_ready(fds[0]);
	for (i = 0; i < count; i++)
		blocked1 += parent_waits_for_first(fds[0], &blocks1);
	reap(first);
	second = spawn("wl_reuse_second", first, fds[1], argv);
	wait_ready(fds[0]);
	for (i = 0; i < count; i++)
		blocked2 += parent_waits_for_second(fds[0], &blocks2);
	reap(second);
	wl_print_truth(wl_gettid(), "parent_waits_for_first", blocked1, blocks1, first,
		       "first_child_wakes");
	wl_print_truth(wl_gettid(), "parent_waits_for_second", blocked2, blocks2, second,
		       "second_child_wakes");
	return 0;
}
