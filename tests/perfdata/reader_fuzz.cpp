// libFuzzer target for PerfDataReader, the tracing data parser and the scheduler tracepoint
// decoder: any bytes, as a file-mode image or a stream, must give records or an Error, never
// a crash, a hang or a sanitizer report; so must the file's tracing data section, the bytes
// taken as a tracing data section themselves, and the samples' raw payloads decoded by
// libtraceevent with the formats that section gives.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "perfdata/format.h"
#include "perfdata/reader.h"
#include "sched/sched_decoder.h"
#include "sched/tracing_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace offwake::perfdata;
  if (auto td = offwake::sched::parse_tracing_data({data, size}); !td) (void)td.error().message();
  auto reader = PerfDataReader::from_memory(Bytes(data, data + size));
  if (!reader) {
    (void)reader.error().message();
    return 0;
  }
  std::vector<std::vector<uint8_t>> raws;  // the samples' raw payloads (a few)
  for (;;) {
    auto rec = reader->next();
    if (!rec) {
      (void)rec.error().message();
      break;
    }
    if (!*rec) break;
    if (const auto* s = std::get_if<SampleRecord>(&**rec)) {
      (void)reader->event_for(*s);
      if (!s->raw.empty() && raws.size() < 64) raws.push_back(s->raw);
    }
  }
  // A file's section, or a stream's tracing data record (read by now).
  const auto& sections = reader->info().other_sections;
  if (auto it = sections.find(kFeatTracingData); it != sections.end()) {
    auto td = offwake::sched::parse_tracing_data(it->second);
    if (!td) {
      (void)td.error().message();
      return 0;
    }
    const std::string* sw = td->format("sched", "sched_switch");
    const std::string* wk = td->format("sched", "sched_waking");
    if (!sw || !wk) return 0;
    auto decoder = offwake::sched::SchedDecoder::from_formats(*sw, *wk);
    if (!decoder) {
      (void)decoder.error().message();
      return 0;
    }
    for (const auto& raw : raws) {
      offwake::sched::SchedEvent e;
      if (auto st = decoder->decode(raw, e); !st) (void)st.error().message();
    }
  }
  return 0;
}
