/* Spends MS milliseconds (default 1000) calling clock_gettime(), which runs in the vDSO: on-CPU
 * samples land in [vdso] frames (__vdso_clock_gettime). */
#include "wl_common.h"

WL_NOINLINE uint64_t wl_vdso_spin(long ms)
{
	uint64_t end = wl_now_ns() + (uint64_t)ms * 1000000ull, sum = 0, now;

	while ((now = wl_now_ns()) < end)
		sum += now;
	return sum;
}

int main(int argc, char **argv)
{
	long count = 1, ms = 1000;

	wl_parse_args(argc, argv, &count, &ms);
	return wl_vdso_spin(ms) == 1; /* never: the sum keeps the loop */
}
