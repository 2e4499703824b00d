// libFuzzer target for perf offwake script's param_dict builder. Any bytes are read as a
// perf.data file or stream and go the way `perf offwake script` takes them: SampleStream (rounds
// sorted, each offwake-time sample grouped with its waker and hop samples), the Symbolizer
// (kernel symbols from a small kallsyms of this folder, ELF files by the names the input gives),
// SampleDicts through DictVisitor, and a Python process_event() handler
// (param_dict_fuzz.py) that checks each dict's keys and reads every value. A malformed input
// must end in an Error of the reader, never a crash, a sanitizer report, a failure to build
// or hand over a dict, or a leaked Python reference:
//  - every object a dict holds, containers included, is referenced once, by the dict, except
//    the ones CPython shares by design (None, True, False, small ints, strings and bytes of
//    up to one character): a reference the builder forgets to drop shows up as a count of 2;
//  - every kGcPeriod inputs, after a collection, Python tracks no more objects than at the
//    first input, give or take kGcSlack (a leaked dict or list stays tracked).
// PYTHONMALLOC=malloc puts Python's objects on the sanitizers' heap, so that ASan sees an
// overflow into one and LeakSanitizer a leaked one.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "perfdata/reader.h"
#include "report/sample_stream.h"
#include "script/python_host.h"
#include "script/sample_dict.h"
#include "symbolize/symbolizer.h"

namespace {

using namespace offwake;

const char* const kHandler = OFFWAKE_SOURCE_DIR "/tests/script/param_dict_fuzz.py";
const char* const kKallsyms = OFFWAKE_SOURCE_DIR "/tests/script/param_dict_fuzz.kallsyms";
constexpr uint64_t kGcPeriod = 256;
constexpr Py_ssize_t kGcSlack = 1000;

[[noreturn]] void fail(const std::string& what) {
  fprintf(stderr, "param_dict_fuzz: %s\n", what.c_str());
  abort();
}

// Objects CPython hands out to everyone who asks: their counts say nothing about us.
bool shared_by_design(PyObject* o) {
  if (o == Py_None || o == Py_True || o == Py_False) return true;
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    const long v = PyLong_AsLongAndOverflow(o, &overflow);
    return !overflow && v >= -5 && v <= 256;
  }
  if (PyUnicode_CheckExact(o)) return PyUnicode_GET_LENGTH(o) <= 1;
  if (PyBytes_CheckExact(o)) return PyBytes_GET_SIZE(o) <= 1;
  return false;
}

// `o` and everything below it are referenced once (the keys of dicts aside: Python interns them).
void expect_owned_once(PyObject* o, const std::string& path) {
  if (!shared_by_design(o) && Py_REFCNT(o) != 1)
    fail(path + " has " + std::to_string(Py_REFCNT(o)) + " references, expected 1 (a leaked reference)");
  if (PyDict_CheckExact(o)) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &key, &value)) {
      const char* k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
      expect_owned_once(value, path + "['" + (k ? k : "?") + "']");
    }
  } else if (PyList_CheckExact(o)) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); ++i)
      expect_owned_once(PyList_GET_ITEM(o, i), path + "[" + std::to_string(i) + "]");
  }
}

// The number of objects the garbage collector tracks, after a collection.
Py_ssize_t gc_tracked_objects() {
  PyGC_Collect();
  script::PyRef gc(PyImport_ImportModule("gc"));
  script::PyRef objects(gc ? PyObject_CallMethod(gc.get(), "get_objects", nullptr) : nullptr);
  if (!objects) fail("gc.get_objects() failed");
  return PyList_Size(objects.get());
}

// The interpreter and the handler, started once and never finalized: objects left at exit are
// then still reachable, not leaks.
script::ScriptHost& host() {
  static script::ScriptHost* h = [] {
    setenv("PYTHONMALLOC", "malloc", 1);
    setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
    // No build-id cache: symbols come from the kallsyms above and the files inputs name.
    setenv("PERF_BUILDID_DIR", "/nonexistent/param_dict_fuzz", 1);
    auto started = script::ScriptHost::start(kHandler, {});
    if (!started) fail("starting the handler: " + started.error().message());
    return std::move(started).value().release();
  }();
  return *h;
}

// Stops on any failure to build or hand over a dict: only the reader may fail on bad input.
class CheckedVisitor : public script::DictVisitor {
 public:
  using DictVisitor::DictVisitor;
  Status offwake(const perfdata::EventDesc& e, const perfdata::SampleRecord& blocked,
                 const report::OffwakeGroup& group) override {
    return must_succeed(DictVisitor::offwake(e, blocked, group), "an offwake-time sample's dict");
  }
  Status sample(const perfdata::EventDesc& e, const perfdata::SampleRecord& s) override {
    return must_succeed(DictVisitor::sample(e, s), "a sample's dict");
  }

 private:
  static Status must_succeed(Status s, const char* what) {
    if (!s) fail(std::string(what) + ": " + s.error().message());
    return s;
  }
};

// Every kGcPeriod inputs: Python tracks no more objects than at the first check, give or take
// kGcSlack (its own caches).
void expect_no_gross_leak() {
  static uint64_t inputs = 0;
  static Py_ssize_t baseline = -1;
  if (inputs++ % kGcPeriod != 0) return;
  const Py_ssize_t now = gc_tracked_objects();
  if (baseline < 0) baseline = now;
  else if (now > baseline + kGcSlack)
    fail("Python tracks " + std::to_string(now - baseline) + " more objects than after the first input (a leak)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  script::ScriptHost& handler = host();
  expect_no_gross_leak();
  auto reader = perfdata::PerfDataReader::from_memory(perfdata::Bytes(data, data + size));
  if (!reader) return 0;
  symbolize::Symbolizer symbolizer(symbolize::SymbolizerOptions{kKallsyms});
  report::SampleStream stream(*reader, symbolizer);
  CheckedVisitor visitor(symbolizer, [&](script::PyRef dict) {
    expect_owned_once(dict.get(), "param_dict");
    return handler.process_event(std::move(dict));
  });
  if (Status s = stream.run(visitor); !s) (void)s.error().message();
  if (PyErr_Occurred()) fail("a Python error was left set");
  return 0;
}
