// Unwind tables as text, for people and tests: one line a row, and a summary of the counts.
#pragma once

#include <string>

#include "unwind/unwind_table.h"

namespace offwake::unwind {

// "rsp+16 rbp=c-16", "rbp+16 rbp=c-16", "plt(11)", "end-of-stack", ...
std::string format_rule(uint32_t rule);

// "0000000000027280 rsp+8\n...": each row at its virtual address.
std::string format_rows(const UnwindTable& table);

// The file, its build id, rows and bytes, FDEs, and rows and code bytes by kind and by cause.
std::string format_summary(const UnwindTable& table);

}  // namespace offwake::unwind
