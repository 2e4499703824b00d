// Debug helper: builds the unwind table of each file named and prints its summary (rows,
// bytes, kinds, build time), and with --rows every row. Not a sub-command: a look inside.
//   unwind_dump [--rows] FILE...
#include <chrono>
#include <cstdio>
#include <cstring>

#include "unwind/table_text.h"
#include "unwind/unwind_table.h"

int main(int argc, char** argv) {
  bool rows = false;
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rows") == 0) {
      rows = true;
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    auto table = offwake::unwind::build_unwind_table(argv[i]);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!table) {
      std::fprintf(stderr, "unwind_dump: %s\n", table.error().message().c_str());
      status = 1;
      continue;
    }
    std::printf("%s  built in %.1f ms\n", offwake::unwind::format_summary(*table).c_str(), ms);
    if (rows) std::fputs(offwake::unwind::format_rows(*table).c_str(), stdout);
  }
  return status;
}
