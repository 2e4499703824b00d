/* Two processes: the child blocks COUNT times in wl_wait_for_message on read() of a pipe;
 * the parent sleeps MS milliseconds, then writes one message from wl_send_message. Both
 * syscalls are issued inline so that the named functions are the user leaves. The child
 * prints the truth line, with the parent as the waker. With -c CPU the child runs on that CPU
 * only, from before its first read (the parent stays where it was started, e.g. by taskset):
 * waker and wakee on two given CPUs. With -r 1 the parent prints "ready parent=P child=C"
 * once the child exists (their pids as the workload sees them: in a container, its own).
 * With -g FILE the child moves itself into a cgroup before its first read, by writing 0 to
 * FILE (that cgroup's cgroup.procs): the waker stays in the parent's cgroup. The child exits
 * only once the parent waits for it, which it then wakes on its way out. */
#define _GNU_SOURCE
#include <sys/wait.h>

#include "wl_common.h"

/* Reads one byte; returns the time blocked if read() slept, 0 if data was already there. */
WL_NOINLINE uint64_t wl_wait_for_message(int fd, long *blocks)
{
	return wl_read_one(fd, blocks);
}

WL_NOINLINE void wl_send_message(int fd)
{
	char c = 'm';

	if (wl_syscall4(SYS_write, fd, (long)&c, 1, 0) != 1)
		exit(3);
}

/* The child exits once its parent sleeps in waitpid (wait4), so that its exit always wakes the
 * parent: without it the parent, still on its way there, now and then found the child gone and
 * never blocked. The parent is named as /proc numbers it (the fourth field of /proc/self/stat:
 * in a pid namespace whose /proc is still the host's, getppid() is the namespace's number);
 * skipped where there is no /proc (a container's root without it). */
static void await_parent_in_waitpid(void)
{
	char buf[512];
	const char *end;
	int f = open("/proc/self/stat", O_RDONLY), parent;
	ssize_t n;

	if (f < 0)
		return;
	n = read(f, buf, sizeof buf - 1);
	close(f);
	if (n <= 0)
		exit(5);
	buf[n] = 0;
	end = strrchr(buf, ')'); /* after the command name, which may hold anything */
	if (!end || sscanf(end + 1, " %*c %d", &parent) != 1)
		exit(5);
	wl_await_sleep(parent, parent, SYS_wait4, -1);
}

int main(int argc, char **argv)
{
	long count = 20, ms = 20, blocks = 0, child_cpu = -1, ready = 0, i;
	const char *child_cgroup = NULL;
	uint64_t blocked = 0;
	int fds[2], status;
	pid_t child;

	wl_parse_args(argc, argv, &count, &ms);
	for (i = 1; i + 1 < argc; i += 2)
		if (strcmp(argv[i], "-c") == 0)
			child_cpu = atol(argv[i + 1]);
		else if (strcmp(argv[i], "-r") == 0)
			ready = atol(argv[i + 1]);
		else if (strcmp(argv[i], "-g") == 0)
			child_cgroup = argv[i + 1];
	if (pipe(fds) != 0)
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		wl_prefault_stack();
		if (child_cpu >= 0) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET((int)child_cpu, &set);
			if (sched_setaffinity(0, sizeof set, &set) != 0) {
				perror("sched_setaffinity");
				_exit(7);
			}
		}
		if (child_cgroup) {
			FILE *procs = fopen(child_cgroup, "w");

			if (!procs || fputs("0\n", procs) < 0 || fclose(procs) != 0) {
				perror(child_cgroup);
				_exit(8);
			}
		}
		close(fds[1]);
		for (i = 0; i < count; i++)
			blocked += wl_wait_for_message(fds[0], &blocks);
		wl_print_truth(wl_gettid(), "wl_wait_for_message", blocked, blocks, getppid(),
			       "wl_send_message");
		await_parent_in_waitpid();
		_exit(0);
	}
	close(fds[0]);
	if (ready) {
		printf("ready parent=%d child=%d\n", (int)getpid(), (int)child);
		fflush(stdout);
	}
	for (i = 0; i < count; i++) {
		wl_pause_ms(ms); /* the child is asleep in read() by now */
		wl_send_message(fds[1]);
	}
	close(fds[1]);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}
