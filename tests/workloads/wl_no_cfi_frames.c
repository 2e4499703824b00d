/* The frames of wl_no_cfi that have no unwind information: built with frame pointers and
 * without CFI (no .eh_frame, no .debug_frame: tests/workloads/CMakeLists.txt), as V8's
 * builtins in node or hand-written assembly are. A walker by the tables finds no row for
 * their pcs; their frame pointer leads on to their callers. Each does work after its call,
 * so that neither is a tail call. */
#include <stdint.h>

uint64_t nocfi_wait(int fd);
void nocfi_poke(int fd);

uint64_t nocfi_middle(int fd, long rounds)
{
	uint64_t ns = 0;
	long i;

	for (i = 0; i < rounds; i++)
		ns += nocfi_wait(fd);
	return ns;
}

long nocfi_poke_middle(int fd, long round)
{
	nocfi_poke(fd);
	return round + 1;
}
