// HEADER_TRACING_DATA (feature bit 1, and the pipe-mode PERF_RECORD_HEADER_TRACING_DATA): the
// tracefs description of the tracepoints a perf recording used, as perf record saves it. It is
// trace-cmd's trace.dat header, version 0.6:
//   "\x17\x08\x44tracing"  magic (10 bytes)
//   "0.6\0"                version, NUL-terminated
//   u8 big_endian, u8 sizeof(long), u32 page size
//   "header_page\0"  u64 size, text       the ring buffer page header's format
//   "header_event\0" u64 size, text       the event header's format
//   u32 count, then per ftrace event: u64 size, format text
//   u32 count, then per system: name "\0", u32 count, then per event: u64 size, format text
//   u32 size, kallsyms text               (perf writes it empty)
//   u32 size, ftrace_printk formats
//   u64 size, saved_cmdlines              (version 0.6 and later)
// Integers are in the byte order the big_endian byte names. Only the event formats are kept:
// the text of tracefs events/<system>/<name>/format, which libtraceevent parses.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/result.h"

namespace offwake::perfdata {

struct EventFormat {
  std::string system;  // "sched"
  std::string name;    // "sched_switch", from the format's "name:" line
  std::string text;    // the whole format file
};

struct TracingData {
  std::string version;  // "0.6"
  bool big_endian = false;
  uint8_t long_size = 0;
  uint32_t page_size = 0;
  std::vector<EventFormat> events;  // ftrace's own events under system "ftrace"

  // The format text of system/name, or nullptr.
  const std::string* format(const std::string& system, const std::string& name) const;
};

// Parses a section; bounds-checked, so that any bytes give a TracingData or an Error naming
// what was being read and where.
Result<TracingData> parse_tracing_data(std::span<const uint8_t> section);

}  // namespace offwake::perfdata
