/* A wakeup from a softirq the sender runs itself: the child blocks COUNT times in wl_udp_wait
 * on a UDP socket on the loopback (read(), the same as recv()); the parent sleeps MS
 * milliseconds, then sends one datagram from wl_udp_send. Loopback delivery runs in the
 * NET_RX softirq that the sender's own system call runs on its way out (local_bh_enable()),
 * so the child's waker is the parent, in wl_udp_send (offwake_softirq_is_tasks). The child
 * prints the truth line. -g: the child says "ready pid=CHILD" and waits for SIGUSR1 before
 * either does anything, so that a recorder can attach to the child alone (the parent is then
 * a waker outside the targets). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "wl_common.h"

/* read() of a UDP socket takes one datagram. */
WL_NOINLINE uint64_t wl_udp_wait(int fd, long *blocks)
{
	return wl_read_one(fd, blocks);
}

WL_NOINLINE void wl_udp_send(int fd, const struct sockaddr_in *to)
{
	char c = 'u';

	if (sendto(fd, &c, 1, 0, (const struct sockaddr *)to, sizeof *to) != 1)
		exit(3);
}

int main(int argc, char **argv)
{
	long count = 20, ms = 20, blocks = 0, i;
	uint64_t blocked = 0;
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof addr;
	int rx, tx, status, go = 0, start[2];
	char c = 0;
	pid_t child;

	wl_parse_args(argc, argv, &count, &ms);
	for (i = 1; i < argc; i++)
		go |= strcmp(argv[i], "-g") == 0;
	if (pipe(start) != 0)
		return 1;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rx = socket(AF_INET, SOCK_DGRAM, 0);
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&addr, sizeof addr) != 0 ||
	    getsockname(rx, (struct sockaddr *)&addr, &len) != 0)
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		wl_prefault_stack();
		if (go)
			wl_wait_for_go();
		if (write(start[1], &c, 1) != 1) /* the parent starts sending */
			_exit(3);
		for (i = 0; i < count; i++)
			blocked += wl_udp_wait(rx, &blocks);
		wl_print_truth(wl_gettid(), "wl_udp_wait", blocked, blocks, getppid(), "wl_udp_send");
		_exit(0);
	}
	if (read(start[0], &c, 1) != 1)
		return 1;
	for (i = 0; i < count; i++) {
		wl_pause_ms(ms);
		wl_udp_send(tx, &addr);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}
