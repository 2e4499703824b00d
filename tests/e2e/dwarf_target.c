/* Code as Debian builds it (-O2 -fomit-frame-pointer, no -g), blocking through glibc's
 * wrappers: a frame-pointer walk loses the callers, an unwinding by .eh_frame (--call-graph
 * dwarf) finds them all. Two processes: the child blocks COUNT times in read() of a pipe, called
 * by dwarf_target_wait at the bottom of dwarf_target_descend, DEPTH frames deep, under
 * dwarf_target_serve; the parent sleeps MS milliseconds, then writes one byte from
 * dwarf_target_kick. The child prints the truth line (wl_common.h), with the parent as the
 * waker:  dwarf_target -n COUNT -m MS */
#define _GNU_SOURCE
#include <sys/wait.h>

#include "../workloads/wl_common.h"

#define DEPTH 5

/* noclone: the functions keep their names (no .constprop or .isra copies). */
#define TARGET_FN __attribute__((noinline, noclone, used))

volatile long dwarf_target_sink;

TARGET_FN uint64_t dwarf_target_wait(int fd, long *blocks)
{
	char c;
	long before = wl_blocks_so_far();
	uint64_t t0 = wl_now_ns();

	if (read(fd, &c, 1) != 1)
		exit(2);
	return wl_blocked_since(t0, before, blocks);
}

/* Not a tail call: the store after the call keeps each frame. */
TARGET_FN uint64_t dwarf_target_descend(int fd, long *blocks, int depth)
{
	uint64_t ns = depth > 1 ? dwarf_target_descend(fd, blocks, depth - 1) : dwarf_target_wait(fd, blocks);

	dwarf_target_sink = depth;
	return ns;
}

TARGET_FN uint64_t dwarf_target_serve(int fd, long count, long *blocks)
{
	uint64_t blocked = 0;
	long i;

	for (i = 0; i < count; i++)
		blocked += dwarf_target_descend(fd, blocks, DEPTH);
	return blocked;
}

TARGET_FN void dwarf_target_kick(int fd)
{
	char c = 'k';

	if (write(fd, &c, 1) != 1)
		exit(3);
	dwarf_target_sink = c;
}

int main(int argc, char **argv)
{
	long count = 10, ms = 20, blocks = 0, i;
	int fds[2], status;
	pid_t child;

	wl_parse_args(argc, argv, &count, &ms);
	if (pipe(fds) != 0)
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		uint64_t blocked;

		wl_prefault_stack();
		close(fds[1]);
		blocked = dwarf_target_serve(fds[0], count, &blocks);
		wl_print_truth(wl_gettid(), "dwarf_target_wait", blocked, blocks, getppid(), "dwarf_target_kick");
		_exit(0);
	}
	close(fds[0]);
	for (i = 0; i < count; i++) {
		wl_pause_ms(ms); /* the child is asleep in read() by now */
		dwarf_target_kick(fds[1]);
	}
	close(fds[1]);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}
