/* A process with known functions for the perf.data writer test: it prints "ready" and then
 * blocks reading stdin inside st_leaf <- st_middle <- main until the test closes the pipe. */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) int st_leaf(int fd) {
  char c;
  int r = (int)read(fd, &c, 1);
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((noinline)) int st_middle(int fd) {
  int r = st_leaf(fd);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

int main(void) {
  printf("ready\n");
  fflush(stdout);
  return st_middle(0) > 0 ? 0 : 1;
}
