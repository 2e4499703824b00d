// The param_dict of one sample, as perf script's Python host builds it, plus what off-wake
// data adds to an offwake-time sample: 'waker' (its comm, pid, tid and callchain), 'state',
// 'count', 'max_ns'.
#pragma once

#include "perfdata/records.h"
#include "script/python_host.h"
#include "symbolize/symbolizer.h"

namespace offwake::script {

class SampleDicts {
 public:
  explicit SampleDicts(symbolize::Symbolizer& symbolizer) : sym_(symbolizer) {}

  // Keys as in perf 6.1: ev_name, attr, sample {pid, tid, cpu, ip, time, period, addr,
  // phys_addr, cpumode}, raw_buf, comm, dso, symbol, symoff (when known), callchain [{ip,
  // sym {start, end, binding, name}, sym_off, dso}]; 'dso' only where the address is
  // mapped, 'sym' only where the symbol is known, as perf does.
  Result<PyRef> build(const perfdata::EventDesc& event, const perfdata::SampleRecord& sample);
  // Adds the off-wake keys to an offwake-time sample's dict; `waker` may be null.
  Status add_offwake(PyObject* dict, const perfdata::SampleRecord& blocked, const perfdata::SampleRecord* waker);

 private:
  PyRef callchain(uint32_t pid, const Callchain& chain);

  symbolize::Symbolizer& sym_;
};

}  // namespace offwake::script
