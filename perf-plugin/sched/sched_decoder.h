// Decodes the raw payload (PERF_SAMPLE_RAW) of sched:sched_switch and sched:sched_waking
// records with libtraceevent, from the events' format descriptions: those of the running
// kernel (tracefs) or those a perf.data file carries (its TRACING_DATA section). No field
// offset is hard-coded.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "sched/sched_event.h"
#include "util/result.h"

struct tep_handle;

namespace offwake::sched {

class SchedDecoder {
 public:
  // From the text of the two events' "format" files (tracefs events/sched/<name>/format).
  static Result<SchedDecoder> from_formats(const std::string& switch_format, const std::string& waking_format);
  // From the running kernel's tracefs (mounted at `tracefs`, /sys/kernel/tracing by default).
  static Result<SchedDecoder> from_tracefs(const std::string& tracefs = "/sys/kernel/tracing");

  SchedDecoder(SchedDecoder&&) noexcept;
  SchedDecoder& operator=(SchedDecoder&&) noexcept;
  ~SchedDecoder();

  // The tracepoint ids (perf_event_attr.config of a PERF_TYPE_TRACEPOINT event, and the raw
  // record's common_type).
  uint64_t switch_id() const { return switch_id_; }
  uint64_t waking_id() const { return waking_id_; }

  // Fills e.kind and the kind's fields of `e` (and e.irq from common_flags) from a raw
  // payload. An unknown common_type, or a payload too short for its format, is an error.
  Status decode(std::span<const uint8_t> raw, SchedEvent& e) const;

 private:
  struct TepDeleter {
    void operator()(tep_handle* t) const;
  };
  struct Layout;  // the fields' places, from the formats
  SchedDecoder() = default;
  std::unique_ptr<tep_handle, TepDeleter> tep_;
  std::unique_ptr<Layout> layout_;
  uint64_t switch_id_ = 0, waking_id_ = 0;
};

}  // namespace offwake::sched
