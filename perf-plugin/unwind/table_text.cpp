#include "unwind/table_text.h"

#include <cinttypes>
#include <cstdio>

#include "unwind/frame_rule.h"

namespace offwake::unwind {

std::string format_rule(uint32_t rule) {
  uint32_t kind = offwake_unwind_kind(rule);
  char buf[64];
  switch (kind) {
    case OFFWAKE_UNWIND_CFA_RSP:
    case OFFWAKE_UNWIND_CFA_RBP: {
      int32_t rbp = offwake_unwind_rbp_offset(rule);
      int n = std::snprintf(buf, sizeof buf, "%s+%u", kind == OFFWAKE_UNWIND_CFA_RSP ? "rsp" : "rbp",
                            offwake_unwind_cfa_offset(rule));
      if (rbp != 0) std::snprintf(buf + n, sizeof buf - n, " rbp=c%+d", rbp);
      return buf;
    }
    case OFFWAKE_UNWIND_PLT:
      std::snprintf(buf, sizeof buf, "plt(%u)", offwake_unwind_cfa_offset(rule));
      return buf;
    case OFFWAKE_UNWIND_RA_RDI:
      std::snprintf(buf, sizeof buf, "rsp+%u ra=rdi", offwake_unwind_cfa_offset(rule));
      return buf;
    default:
      return kind_name(kind);
  }
}

std::string format_rows(const UnwindTable& table) {
  std::string out;
  char buf[96];
  for (const offwake_unwind_row& r : table.rows) {
    std::snprintf(buf, sizeof buf, "%016" PRIx64 " ", table.base + r.pc);
    out += buf + format_rule(r.rule) + "\n";
  }
  return out;
}

std::string format_summary(const UnwindTable& table) {
  std::string out = table.path + ": build id " + (table.build_id.empty() ? std::string("none") : table.build_id.hex()) + "\n";
  char buf[160];
  std::snprintf(buf, sizeof buf, "  %zu rows, %zu bytes; base %#" PRIx64 "; FDEs: %" PRIu64 " .eh_frame, %" PRIu64
                " .debug_frame, %" PRIu64 " unreadable, %" PRIu64 " outside code, %" PRIu64 " overlapping\n",
                table.rows.size(), table.bytes(), table.base, table.stats.fdes_eh_frame, table.stats.fdes_debug_frame,
                table.stats.fdes_unreadable, table.stats.fdes_outside_code, table.stats.fdes_overlapping);
  out += buf;
  if (table.rows.empty()) out += "  empty: " + table.empty_reason + "\n";
  for (uint32_t k = 0; k < OFFWAKE_UNWIND_KINDS; ++k) {
    if (table.stats.rows_by_kind[k] == 0) continue;
    std::snprintf(buf, sizeof buf, "  %-13s %8" PRIu64 " rows %10" PRIu64 " code bytes\n", kind_name(k),
                  table.stats.rows_by_kind[k], table.stats.code_bytes_by_kind[k]);
    out += buf;
  }
  for (const auto& [reason, n] : table.stats.rows_by_reason) {
    std::snprintf(buf, sizeof buf, "    %8" PRIu64 " rows: ", n);
    out += buf + reason + "\n";
  }
  return out;
}

}  // namespace offwake::unwind
