/* One blocking call reached by two call paths with the same frames, so that a thread blocks
 * with the same registers (pc, sp) whichever path it took, and only the return addresses on
 * its stack tell them apart; likewise its waker. For the test of remembered user stack walks
 * (tests/e2e/walk_memo_test.cpp): a walk replayed from a thread's last one must find the path
 * of this block, not of the last. Built -O2 with frame pointers: walked by the unwind tables,
 * and rbp (which a memo matches) the same on either path.
 *
 * A child process reads a pipe COUNT times, each time through memo_path_a or memo_path_b
 * (into memo_read); the parent writes each byte after MS milliseconds through memo_wake_a or
 * memo_wake_b (into memo_write), on the same path. The paths come in runs of one to three
 * (a fixed pseudo-random sequence both processes compute), so that a block is as often on
 * the last one's path as not. The child prints a truth line per path:
 *
 *   truth tid=C function=memo_path_a blocked_ns=N count=K waker_tid=P waker_function=memo_wake_a
 *   truth tid=C function=memo_path_b ... waker_function=memo_wake_b
 *
 * With -k, path b reads (and its waker writes) a unix socket instead of the pipe: the same
 * user frames on either path still, but another kernel stack, blocked (unix_stream_read_
 * generic, not pipe_read) and waking (unix_stream_sendmsg, not pipe_write). For the test of
 * remembered kernel stacks (bpf-progs/kernel_memo.bpf.h): a block on one must not get the
 * last block's stack from the other.
 *
 * With -w, the child takes either path from memo_wide, whose frame holds WIDE_BYTES: the words
 * a walk of its stack reads then lie over more stack than a replay reads at once (WINDOW,
 * bpf-progs/maps.bpf.h), and a replay checks them a window at a time instead.
 *
 *   usage: wl_memo_paths [-k] [-w] [-n COUNT] [-m MS] */
#define _GNU_SOURCE
#include <sys/socket.h>
#include <sys/wait.h>

#include "wl_common.h"

#define MEMO_FUNCTION __attribute__((noipa, used))

#define WIDE_BYTES (12 << 10)

static int g_pipe[2], g_socket[2];
static int g_read_fd, g_write_fd; /* the path's: set before it is taken */
static volatile uint64_t g_sink;

MEMO_FUNCTION uint64_t memo_read(long *blocks)
{
	return wl_read_one(g_read_fd, blocks);
}

/* The two paths: the same code, so the same frame, so the same sp at the call. The work after
 * the call keeps it from being a tail call. */
MEMO_FUNCTION uint64_t memo_path_a(long *blocks)
{
	uint64_t t = memo_read(blocks);

	g_sink += t;
	return t;
}

MEMO_FUNCTION uint64_t memo_path_b(long *blocks)
{
	uint64_t t = memo_read(blocks);

	g_sink += t;
	return t;
}

/* Path p under a frame of WIDE_BYTES (-w). */
MEMO_FUNCTION uint64_t memo_wide(int p, long *blocks)
{
	volatile char wide[WIDE_BYTES];
	uint64_t t;

	wide[0] = 1;
	t = p ? memo_path_b(blocks) : memo_path_a(blocks);
	g_sink += wide[0];
	return t;
}

MEMO_FUNCTION void memo_write(void)
{
	char c = 'm';

	if (wl_syscall4(SYS_write, g_write_fd, (long)&c, 1, 0) != 1)
		exit(3);
}

MEMO_FUNCTION void memo_wake_a(void)
{
	memo_write();
	g_sink++;
}

MEMO_FUNCTION void memo_wake_b(void)
{
	memo_write();
	g_sink++;
}

/* The path of block i: runs of one to three blocks on a path, then the other. */
static int memo_path_of(long i)
{
	static uint64_t state = 0x2545F4914F6CDD1Dull;
	static long run_end = -1, at = -1;
	static int path = 1;

	while (at < i) {
		at++;
		if (at > run_end) {
			state = state * 6364136223846793005ull + 1442695040888963407ull;
			run_end = at + (long)((state >> 33) % 3);
			path = !path;
		}
	}
	return path;
}

int main(int argc, char **argv)
{
	long count = 40, ms = 10, blocks[2] = { 0, 0 }, i;
	uint64_t blocked[2] = { 0, 0 };
	int status, socket_b = 0, wide = 0;
	pid_t child;

	while (argc > 1 && (strcmp(argv[1], "-k") == 0 || strcmp(argv[1], "-w") == 0)) {
		if (argv[1][1] == 'k')
			socket_b = 1;
		else
			wide = 1;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	wl_parse_args(argc, argv, &count, &ms);
	if (pipe(g_pipe) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, g_socket) != 0)
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		wl_prefault_stack();
		close(g_pipe[1]);
		close(g_socket[1]);
		for (i = 0; i < count; i++) {
			int p = memo_path_of(i);

			g_read_fd = p && socket_b ? g_socket[0] : g_pipe[0];
			if (wide)
				blocked[p] += memo_wide(p, &blocks[p]);
			else
				blocked[p] += p ? memo_path_b(&blocks[p]) : memo_path_a(&blocks[p]);
		}
		wl_print_truth(wl_gettid(), "memo_path_a", blocked[0], blocks[0], getppid(), "memo_wake_a");
		wl_print_truth(wl_gettid(), "memo_path_b", blocked[1], blocks[1], getppid(), "memo_wake_b");
		_exit(0);
	}
	close(g_pipe[0]);
	close(g_socket[0]);
	for (i = 0; i < count; i++) {
		wl_pause_ms(ms); /* the child is asleep in read() by now */
		g_write_fd = memo_path_of(i) && socket_b ? g_socket[1] : g_pipe[1];
		if (memo_path_of(i))
			memo_wake_b();
		else
			memo_wake_a();
	}
	close(g_pipe[1]);
	close(g_socket[1]);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}
