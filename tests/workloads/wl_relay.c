/* A wakeup chain of three processes relaying through two pipes, COUNT rounds:
 *   relay-first   naps MS milliseconds in wl_relay_nap (woken by a timer interrupt), then
 *                 writes pipe 2 from wl_relay_kick;
 *   relay-second  blocks reading pipe 2 in wl_relay_wait_kick, then writes pipe 1 from
 *                 wl_relay_pass;
 *   relay-third   blocks reading pipe 1 in wl_relay_wait_pass.
 * So relay-third's block was caused by relay-second's write, which waited for relay-first's
 * write, which waited for the nap: a chain of three hops. Every process times its own blocking
 * and prints a truth line (relay-first's waker is the timer: waker_tid=0); relay-third also
 * prints "relay" with the tids of all three. */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <sys/wait.h>

#include "wl_common.h"

WL_NOINLINE uint64_t wl_relay_nap(long ms, long *blocks)
{
	return wl_block_ms(ms, blocks);
}

WL_NOINLINE void wl_relay_kick(int fd)
{
	char c = 'k';

	if (wl_syscall4(SYS_write, fd, (long)&c, 1, 0) != 1)
		exit(3);
}

WL_NOINLINE uint64_t wl_relay_wait_kick(int fd, long *blocks)
{
	return wl_read_one(fd, blocks);
}

WL_NOINLINE void wl_relay_pass(int fd)
{
	char c = 'p';

	if (wl_syscall4(SYS_write, fd, (long)&c, 1, 0) != 1)
		exit(3);
}

WL_NOINLINE uint64_t wl_relay_wait_pass(int fd, long *blocks)
{
	return wl_read_one(fd, blocks);
}

/* Each process reports its tid to relay-third through `tids` before the first round. */
static void send_tid(int fd)
{
	int tid = wl_gettid();

	if (write(fd, &tid, sizeof tid) != sizeof tid)
		exit(4);
}

int main(int argc, char **argv)
{
	long count = 20, ms = 20, blocks = 0, i;
	uint64_t blocked = 0;
	int pipe1[2], pipe2[2], tids[2], status, first_tid, second_tid;
	pid_t second, third;

	wl_parse_args(argc, argv, &count, &ms);
	if (pipe(pipe1) != 0 || pipe(pipe2) != 0 || pipe(tids) != 0)
		return 1;
	third = fork();
	if (third < 0)
		return 1;
	if (third == 0) {
		wl_prefault_stack();
		prctl(PR_SET_NAME, "relay-third");
		close(pipe1[1]);
		close(pipe2[0]);
		close(pipe2[1]);
		if (read(tids[0], &first_tid, sizeof first_tid) != sizeof first_tid ||
		    read(tids[0], &second_tid, sizeof second_tid) != sizeof second_tid)
			_exit(4);
		for (i = 0; i < count; i++)
			blocked += wl_relay_wait_pass(pipe1[0], &blocks);
		printf("relay first=%d second=%d third=%d\n", first_tid, second_tid, wl_gettid());
		wl_print_truth(wl_gettid(), "wl_relay_wait_pass", blocked, blocks, second_tid, "wl_relay_pass");
		_exit(0);
	}
	send_tid(tids[1]); /* relay-first is this process */
	second = fork();
	if (second < 0)
		return 1;
	if (second == 0) {
		wl_prefault_stack();
		prctl(PR_SET_NAME, "relay-second");
		close(pipe1[0]);
		close(pipe2[1]);
		send_tid(tids[1]);
		for (i = 0; i < count; i++) {
			blocked += wl_relay_wait_kick(pipe2[0], &blocks);
			wl_relay_pass(pipe1[1]);
		}
		wl_print_truth(wl_gettid(), "wl_relay_wait_kick", blocked, blocks, getppid(), "wl_relay_kick");
		_exit(0);
	}
	prctl(PR_SET_NAME, "relay-first");
	close(pipe1[0]);
	close(pipe1[1]);
	close(pipe2[0]);
	wl_pause_ms(ms); /* the others are blocked in read() by now */
	for (i = 0; i < count; i++) {
		blocked += wl_relay_nap(ms, &blocks);
		wl_relay_kick(pipe2[1]);
	}
	close(pipe2[1]);
	if (waitpid(second, &status, 0) != second || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	if (waitpid(third, &status, 0) != third || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	wl_print_truth(wl_gettid(), "wl_relay_nap", blocked, blocks, 0, "[hardirq]");
	return 0;
}
