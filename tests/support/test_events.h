// A software event with callchains, for tests that write perf.data about a live process.
#pragma once

#include <string>

#include "perfdata/records.h"

namespace offwake::test {

inline perfdata::EventDesc callchain_event(const std::string& name, uint64_t id = 1) {
  perfdata::EventDesc e;
  e.attr.type = PERF_TYPE_SOFTWARE;
  e.attr.config = PERF_COUNT_SW_BPF_OUTPUT;
  e.attr.sample_period = 1;
  e.attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                       PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
  e.attr.sample_id_all = 1;
  e.name = name;
  e.ids = {id};
  return e;
}

}  // namespace offwake::test
