#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "script/sample_dict.h"


#include "offwake.h"
#include "samples/offwake_events.h"
#include "report/profile.h"

namespace offwake::script {

namespace {

// PERF_MEM_NA (linux/perf_event.h): every part of the data source "not available".
constexpr uint64_t kDataSourceNotAvailable = (uint64_t{PERF_MEM_OP_NA} << PERF_MEM_OP_SHIFT) |
                                             (uint64_t{PERF_MEM_LVL_NA} << PERF_MEM_LVL_SHIFT) |
                                             (uint64_t{PERF_MEM_SNOOP_NA} << PERF_MEM_SNOOP_SHIFT) |
                                             (uint64_t{PERF_MEM_LOCK_NA} << PERF_MEM_LOCK_SHIFT) |
                                             (uint64_t{PERF_MEM_TLB_NA} << PERF_MEM_TLB_SHIFT);

// Sets d[key] = v and drops our reference to v.
void set(PyObject* d, const char* key, PyObject* v) {
  if (!v) return;
  PyDict_SetItemString(d, key, v);
  Py_DECREF(v);
}

PyObject* u64(uint64_t v) { return PyLong_FromUnsignedLongLong(v); }
PyObject* str(const std::string& s) { return PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"); }

FrameContext context_of(uint16_t misc) {
  switch (misc & PERF_RECORD_MISC_CPUMODE_MASK) {
    case PERF_RECORD_MISC_KERNEL: return FrameContext::kKernel;
    case PERF_RECORD_MISC_HYPERVISOR: return FrameContext::kHypervisor;
    case PERF_RECORD_MISC_GUEST_KERNEL: return FrameContext::kGuestKernel;
    case PERF_RECORD_MISC_GUEST_USER: return FrameContext::kGuestUser;
    default: return FrameContext::kUser;
  }
}

// The keys perf 6.1 fills from sample fields these recordings never have, with the values it
// gives them then, so that a script written for perf finds them: no branch stack, no
// registers, weight and transaction 0, the data source "not available" (PERF_MEM_NA, and
// perf's decoding of it), no read values (perf gives one tuple of zeros and a NULL object,
// which repr() crashes on: an empty list here).
void add_unrecorded_fields(PyObject* d, PyObject* sample) {
  set(d, "brstack", PyList_New(0));
  set(d, "brstacksym", PyList_New(0));
  set(d, "iregs", str(""));
  set(d, "uregs", str(""));
  set(sample, "weight", u64(0));
  set(sample, "transaction", u64(0));
  set(sample, "datasrc", u64(kDataSourceNotAvailable));
  set(sample, "datasrc_decode", str("|OP N/A|LVL N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A"));
  set(sample, "values", PyList_New(0));
}

PyObject* symbol_dict(const symbolize::Symbol& s) {
  PyObject* d = PyDict_New();
  set(d, "start", u64(s.start));
  set(d, "end", u64(s.end));
  set(d, "binding", u64(s.binding));
  set(d, "name", str(s.name));
  return d;
}

}  // namespace

PyRef SampleDicts::callchain(uint32_t pid, const Callchain& chain) {
  PyRef list(PyList_New(0));
  for (const symbolize::ResolvedFrame& f : sym_.resolve_cached(pid, chain)) {
    PyRef frame(PyDict_New());
    set(frame.get(), "ip", u64(f.ip));
    if (f.sym) {
      set(frame.get(), "sym", symbol_dict(*f.sym));
      set(frame.get(), "sym_off", u64(f.symoff));
    }
    if (f.mapped) set(frame.get(), "dso", str(f.dso));
    PyList_Append(list.get(), frame.get());
  }
  return list;
}

Result<PyRef> SampleDicts::build(const perfdata::EventDesc& event, const perfdata::SampleRecord& s) {
  PyRef dict(PyDict_New());
  if (!dict) return Error("Python: out of memory");
  PyObject* d = dict.get();
  set(d, "ev_name", str(event.name));
  set(d, "attr", PyBytes_FromStringAndSize(reinterpret_cast<const char*>(&event.attr), sizeof event.attr));

  PyObject* sample = PyDict_New();
  set(sample, "pid", u64(s.pid));
  set(sample, "tid", u64(s.tid));
  set(sample, "cpu", u64(s.cpu));
  set(sample, "ip", u64(s.ip));
  set(sample, "time", u64(s.time));
  set(sample, "period", u64(s.period));
  set(sample, "phys_addr", u64(0));
  set(sample, "addr", u64(s.addr));
  set(sample, "cpumode", u64(s.misc & PERF_RECORD_MISC_CPUMODE_MASK));
  add_unrecorded_fields(d, sample);
  set(d, "sample", sample);
  set(d, "raw_buf", PyBytes_FromStringAndSize(reinterpret_cast<const char*>(s.raw.data()),
                                              static_cast<Py_ssize_t>(s.raw.size())));
  set(d, "comm", str(sym_.thread_name(s.tid)));

  symbolize::ResolvedFrame top = sym_.resolve(s.pid, s.ip, context_of(s.misc));
  if (top.mapped) {
    set(d, "dso", str(top.dso));
    set(d, "dso_bid", str(top.build_id ? top.build_id->hex() : ""));
    set(d, "dso_map_start", u64(top.map_start));
    set(d, "dso_map_end", u64(top.map_end));
  }
  if (top.sym) {
    set(d, "symbol", str(top.sym->name));
    set(d, "symoff", u64(top.symoff));
  }
  set(d, "callchain", callchain(s.pid, s.callchain).release());
  if (event.attr.sample_type & PERF_SAMPLE_CGROUP) add_cgroup(d, s.cgroup);
  return dict;
}

void SampleDicts::add_cgroup(PyObject* d, uint64_t id) {
  const std::string& path = cgroups_.path(id);
  set(d, "cgroup_id", u64(id));
  set(d, "cgroup", str(path));
  if (std::string container = report::container_id(path); !container.empty()) set(d, "container", str(container));
}

void SampleDicts::add_thread(PyObject* d, const perfdata::SampleRecord& s) {
  set(d, "pid", u64(s.pid));
  set(d, "tid", u64(s.tid));
  set(d, "comm", str(sym_.thread_name(s.tid)));
  set(d, "callchain", callchain(s.pid, s.callchain).release());
}

PyRef SampleDicts::chain(const DecodedRaw& raw, const report::OffwakeGroup& group, const char* end) {
  PyRef list(PyList_New(0));
  if (!group.waker) return list;
  const size_t hops = 1 + group.hops.size();
  for (size_t k = 1; k <= hops; ++k) {
    PyRef hop(PyDict_New());
    set(hop.get(), "hop", u64(k));
    const perfdata::SampleRecord* waker = group.waker;
    uint32_t waker_flags = raw.head.waker_flags;
    if (k > 1) {
      const report::OffwakeHop& h = group.hops[k - 2];
      waker = h.waker;
      const bool known = k - 2 < raw.hops.size();
      const OffwakeRawHop rh = known ? raw.hops[k - 2] : OffwakeRawHop{};
      waker_flags = known ? rh.waker_flags : 0;
      PyObject* b = PyDict_New();
      add_thread(b, *h.blocked);
      set(b, "state", PyUnicode_FromString(known ? offwake_state_letters(rh.state) : ""));
      set(hop.get(), "blocked", b);
    }
    if (waker) {
      add_thread(hop.get(), *waker);
      set(hop.get(), "context", PyUnicode_FromString(offwake_waker_context(waker_flags)));
    }
    if (k == hops) set(hop.get(), "end", PyUnicode_FromString(end));
    else PyDict_SetItemString(hop.get(), "end", Py_None);
    PyList_Append(list.get(), hop.get());
  }
  return list;
}

Status SampleDicts::add_offwake(PyObject* d, const perfdata::SampleRecord& blocked, const report::OffwakeGroup& group) {
  if (const std::optional<DecodedRaw> raw = decode_offwake_raw(blocked.raw)) {
    set(d, "state", PyUnicode_FromString(offwake_state_letters(raw->head.state)));
    set(d, "count", u64(raw->head.count));
    set(d, "max_ns", u64(raw->head.max_ns));
    // Only in sampled recordings (--sample-period), so that the dicts of others stay as they were.
    if (raw->head.sample_period_ns) {
      set(d, "sample_period_ns", u64(raw->head.sample_period_ns));
      set(d, "sampled", u64(raw->head.sampled));
      set(d, "sampled_ns", u64(raw->head.sampled_ns));
    }
    if (const perfdata::SampleRecord* waker = group.waker) {
      PyObject* w = PyDict_New();
      set(w, "comm", str(sym_.thread_name(waker->tid)));
      set(w, "pid", u64(waker->pid));
      set(w, "tid", u64(waker->tid));
      set(w, "context", PyUnicode_FromString(offwake_waker_context(raw->head.waker_flags)));
      set(w, "callchain", callchain(waker->pid, waker->callchain).release());
      if (raw->head.version >= 3) add_cgroup(w, raw->head.waker_cgroup);
      set(d, "waker", w);
    }
    // Only in recordings with chains, so that the dicts of others stay what they were.
    if (group.chain_events) {
      const char* end = group.cut_short() ? report::kChainCutShort : offwake_chain_end_name(group.chain_end);
      set(d, "chain_end", PyUnicode_FromString(end));
      if (group.cut_short()) {
        uint64_t whole = 0;  // hops that are there with their waker
        if (group.waker) {
          whole = 1;
          for (const report::OffwakeHop& h : group.hops) whole += h.waker != nullptr;
        }
        set(d, "chain_missing", u64(group.expected_hops + 1 - whole));
      }
      set(d, "chain", chain(*raw, group, end).release());
    }
  }
  if (PyErr_Occurred()) {
    PyErr_Print();
    return Error("building the off-wake keys");
  }
  return ok_status();
}

Status DictVisitor::offwake(const perfdata::EventDesc& event, const perfdata::SampleRecord& blocked,
                            const report::OffwakeGroup& group) {
  const std::optional<DecodedRaw> raw = decode_offwake_raw(blocked.raw);
  auto kept = filter_.keeps(blocked, blocks_summed(raw));
  if (!kept) return kept.error();
  if (!*kept) return ok_status();
  auto dict = dicts_.build(event, blocked);
  if (!dict) return dict.error();
  OFFWAKE_TRY(dicts_.add_offwake(dict->get(), blocked, group));
  return consume_(std::move(dict).value());
}

Status DictVisitor::sample(const perfdata::EventDesc& event, const perfdata::SampleRecord& s) {
  if (!filter_.wanted(s)) return ok_status();
  auto dict = dicts_.build(event, s);
  if (!dict) return dict.error();
  return consume_(std::move(dict).value());
}

}  // namespace offwake::script
