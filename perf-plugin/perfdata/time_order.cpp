#include "perfdata/time_order.h"

#include <algorithm>

#include "perfdata/bytes.h"
#include "perfdata/sample_encoder.h"

namespace offwake::perfdata {

Result<SampleId> sample_id_trailer(const OtherRecord& o, const perf_event_attr& attr) {
  const size_t n = sample_id_size(attr);
  if (o.payload.size() < n)
    return Error::bad_input("record of type " + std::to_string(o.type) + " is too short for its sample_id");
  ByteReader br(std::span<const uint8_t>(o.payload).subspan(o.payload.size() - n), "sample_id");
  return get_sample_id(br, attr);
}

uint64_t record_time(const Record& r, const perf_event_attr& attr) {
  return std::visit(
      [&](const auto& rec) -> uint64_t {
        using T = std::decay_t<decltype(rec)>;
        if constexpr (std::is_same_v<T, SampleRecord>) {
          return rec.time;
        } else if constexpr (std::is_same_v<T, OtherRecord>) {
          auto sid = sample_id_trailer(rec, attr);
          return sid ? sid->time : 0;
        } else if constexpr (requires { rec.sample_id; }) {
          return rec.sample_id.time;
        } else {
          return 0;
        }
      },
      r);
}

}  // namespace offwake::perfdata
