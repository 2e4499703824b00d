// libFuzzer target for PerfDataReader and the tracing data parser: any bytes, as a file-mode
// image or a stream, must give records or an Error, never a crash, a hang or a sanitizer
// report; so must the file's tracing data section, and the bytes taken as a tracing data
// section themselves.
#include <cstddef>
#include <cstdint>

#include "perfdata/format.h"
#include "perfdata/reader.h"
#include "perfdata/tracing_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace offwake::perfdata;
  if (auto td = offwake::perfdata::parse_tracing_data({data, size}); !td) (void)td.error().message();
  auto reader = PerfDataReader::from_memory(Bytes(data, data + size));
  if (!reader) {
    (void)reader.error().message();
    return 0;
  }
  for (;;) {
    auto rec = reader->next();
    if (!rec) {
      (void)rec.error().message();
      break;
    }
    if (!*rec) break;
    if (const auto* s = std::get_if<SampleRecord>(&**rec)) (void)reader->event_for(*s);
  }
  // A file's section, or a stream's tracing data record (read by now).
  const auto& sections = reader->info().other_sections;
  if (auto it = sections.find(kFeatTracingData); it != sections.end()) {
    auto td = offwake::perfdata::parse_tracing_data(it->second);
    if (!td) (void)td.error().message();
  }
  return 0;
}
