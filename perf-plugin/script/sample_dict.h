// The param_dict of one sample, as perf script's Python host builds it, plus its cgroup, and
// what off-wake data adds to an offwake-time sample: 'waker' (its comm, pid, tid, callchain
// and cgroup), 'state', 'count', 'max_ns', and in a recording with wakeup chains 'chain' (its
// hops) and 'chain_end'.
#pragma once

#include <functional>

#include "perfdata/records.h"
#include "samples/offwake_raw.h"
#include "report/cgroups.h"
#include "report/sample_filter.h"
#include "report/sample_stream.h"
#include "script/python_host.h"
#include "symbolize/symbolizer.h"

namespace offwake::script {

class SampleDicts {
 public:
  explicit SampleDicts(symbolize::Symbolizer& symbolizer) : sym_(symbolizer) {}

  // Keys as in perf 6.1: ev_name, attr, sample {pid, tid, cpu, ip, time, period, addr,
  // phys_addr, cpumode, and perf's values for fields never recorded: weight, transaction,
  // datasrc, datasrc_decode, values}, raw_buf, comm, dso, dso_bid, dso_map_start,
  // dso_map_end, symbol, symoff (when known), brstack, brstacksym, iregs, uregs, callchain [{ip,
  // sym {start, end, binding, name}, sym_off, dso}]; 'dso' only where the address is
  // mapped, 'sym' only where the symbol is known, as perf does. With PERF_SAMPLE_CGROUP:
  // 'cgroup_id', 'cgroup' (its path, "" for none, "unknown" when the recording does not name
  // it) and, when the path names one, 'container' (report/cgroups.h).
  Result<PyRef> build(const perfdata::EventDesc& event, const perfdata::SampleRecord& sample);
  // A record before the samples: a PERF_RECORD_CGROUP names a cgroup.
  void observe(const perfdata::Record& r) { cgroups_.observe(r); }
  const report::CgroupTable& cgroups() const { return cgroups_; }
  // Adds the off-wake keys to an offwake-time sample's dict, from the samples that followed it.
  // 'waker' when hop 1's sample is there, with the cgroup keys above of the waker (a
  // recording since the raw data's version 3). When the recording has chain events:
  //   'chain_end'  why the chain ends (offwake_chain_end_name), or "cut-short" when fewer hop
  //                samples follow than announced (then also 'chain_missing': how many hops
  //                are missing or lack their waker)
  //   'chain'      the hops that are there, hop 1 first: {'hop' (1, 2, ...), 'pid', 'tid',
  //                'comm', 'context', 'callchain' (the hop's waker, as in 'waker'), 'end'
  //                (None; the last hop: 'chain_end')}, and from hop 2 on 'blocked': {'pid',
  //                'tid', 'comm', 'state', 'callchain'} (the previous hop's waker in its latest
  //                block before that wakeup). A hop whose waker sample is missing has only
  //                'hop', 'blocked' and 'end'.
  Status add_offwake(PyObject* dict, const perfdata::SampleRecord& blocked, const report::OffwakeGroup& group);

 private:
  PyRef callchain(uint32_t pid, const Callchain& chain);
  // The 'chain' list; `raw`: the offwake-time sample's raw data, decoded.
  PyRef chain(const DecodedRaw& raw, const report::OffwakeGroup& group, const char* end);
  // A thread of the chain: 'pid', 'tid', 'comm', 'callchain' of `s`.
  void add_thread(PyObject* d, const perfdata::SampleRecord& s);
  // 'cgroup_id', 'cgroup' and 'container' of cgroup `id`.
  void add_cgroup(PyObject* d, uint64_t id);

  symbolize::Symbolizer& sym_;
  report::CgroupTable cgroups_;
};

// Hands every sample of a SampleStream on as its param_dict, in the stream's order, the
// off-wake keys added to each offwake-time sample from the samples that follow it: what perf
// offwake script gives its process_event() handler (and the fuzz target checks). Only the
// samples `selection` keeps, each judged by itself as perf script judges it: an offwake-waker
// sample by the waker's thread, whether its offwake-time sample was kept or not.
class DictVisitor : public report::SampleVisitor {
 public:
  using Consumer = std::function<Status(PyRef dict)>;
  DictVisitor(symbolize::Symbolizer& symbolizer, Consumer consume, report::SampleSelection selection = {})
      : dicts_(symbolizer), consume_(std::move(consume)), filter_(std::move(selection), symbolizer, dicts_.cgroups()) {}

  Status offwake(const perfdata::EventDesc& event, const perfdata::SampleRecord& blocked,
                 const report::OffwakeGroup& group) override;
  Status sample(const perfdata::EventDesc& event, const perfdata::SampleRecord& s) override;
  void observed(const perfdata::Record& r) override { dicts_.observe(r); }

 private:
  SampleDicts dicts_;
  Consumer consume_;
  report::SampleFilter filter_;  // after dicts_, whose cgroups it reads
};

}  // namespace offwake::script
