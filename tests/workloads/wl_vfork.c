/* Blocks in uninterruptible sleep (D), COUNT times: wl_vfork_wait vforks a child that sleeps MS
 * milliseconds and exits, and the parent waits for it in the kernel in TASK_KILLABLE (D).
 * The parent prints the truth line; its "waker" is the exiting child. The user leaf of the
 * block is libc's __vfork, which takes its return address off the stack (the child would
 * overwrite it), so the frame-pointer walk goes from __vfork straight to main. */
#define _GNU_SOURCE
#include <sys/wait.h>

#include "wl_common.h"

WL_NOINLINE uint64_t wl_vfork_wait(long ms, pid_t *child)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	uint64_t t0 = wl_now_ns();
	pid_t pid = vfork();

	if (pid == 0) {
		/* The child borrows the parent's memory: a system call, then _exit. */
		syscall(SYS_nanosleep, &ts, NULL);
		_exit(0);
	}
	if (pid < 0)
		exit(2);
	*child = pid;
	return wl_now_ns() - t0;
}

int main(int argc, char **argv)
{
	long count = 20, ms = 20, blocks = 0, before, i;
	uint64_t blocked = 0;
	pid_t child = 0;

	wl_parse_args(argc, argv, &count, &ms);
	for (i = 0; i < count; i++) {
		before = wl_blocks_so_far();
		blocked += wl_vfork_wait(ms, &child);
		blocks += wl_blocks_so_far() - before;
		if (waitpid(child, NULL, 0) != child)
			return 1;
	}
	wl_print_truth(wl_gettid(), "__vfork", blocked, blocks, child, "_exit");
	return 0;
}
