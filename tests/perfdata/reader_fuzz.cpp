// libFuzzer target for PerfDataReader: any bytes, as a file-mode image or a stream, must give
// records or an Error, never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>

#include "perfdata/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace offwake::perfdata;
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
  return 0;
}
