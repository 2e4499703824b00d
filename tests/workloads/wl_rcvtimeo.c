/* One thread waits COUNT times for MS milliseconds in wl_rcvtimeo_wait: a read of a UDP
 * socket nobody sends to (read(), the same as recv()), with a receive timeout (SO_RCVTIMEO).
 * The socket's wait ends on a timer of the timer wheel (schedule_timeout), whose callbacks
 * run in the timer softirq, not in the hard interrupt: the expected waker is "[softirq]"
 * with tid 0. On an idle CPU that
 * softirq runs at the end of the timer interrupt, on the CPU's interrupt stack. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "wl_common.h"

static int rx = -1;

WL_NOINLINE uint64_t wl_rcvtimeo_wait(long ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	char c;
	uint64_t t0;
	long r;

	if (setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
		exit(3);
	t0 = wl_now_ns();
	r = wl_syscall4(SYS_read, rx, (long)&c, 1, 0); /* a recv() */
	if (r != -EAGAIN && !(r == -EINTR && wl_stop)) /* only the timeout ends it */
		exit(2);
	return wl_now_ns() - t0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rx = socket(AF_INET, SOCK_DGRAM, 0);
	if (rx < 0 || bind(rx, (struct sockaddr *)&addr, sizeof addr) != 0)
		return 1;
	return wl_timer_sleeps_main(argc, argv, wl_rcvtimeo_wait, "wl_rcvtimeo_wait", "[softirq]");
}
