#include "blocks/block_filters.h"

namespace offwake {

namespace {

// Microseconds whose nanoseconds fit in 64 bits (over 500 years).
constexpr double kMaxUs = 1.8e13;

uint64_t to_ns(double us) { return static_cast<uint64_t>(us * 1000); }

}  // namespace

std::string durations_error(double min_us, double max_us, double sample_period_us) {
  if (!(min_us >= 0 && min_us <= kMaxUs) || !(max_us >= 0 && max_us <= kMaxUs))
    return "--min-block and --max-block take 0 to 1.8e13 microseconds";
  if (max_us && max_us < min_us) return "--max-block is below --min-block";
  if (!(sample_period_us >= 0 && sample_period_us <= kMaxUs))
    return "--sample-period takes 0 (off) to 1.8e13 microseconds";
  if (sample_period_us && to_ns(sample_period_us) == 0) return "--sample-period is below a nanosecond";
  return "";
}

void set_durations(BlockFilters& f, double min_us, double max_us, double sample_period_us) {
  f.min_block_ns = to_ns(min_us);
  f.max_block_ns = to_ns(max_us);
  f.sample_period_ns = to_ns(sample_period_us);
}

}  // namespace offwake
