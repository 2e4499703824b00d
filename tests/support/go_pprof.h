// go tool pprof, the reference reader of pprof files, run offline, and a parser of what its
// -raw output prints (github.com/google/pprof's Profile.String()).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/run.h"

namespace offwake::test {

// Runs `go tool pprof ARGS` with a HOME, GOPATH, GOCACHE and PPROF_TMPDIR of its own in a
// temporary directory, GOTOOLCHAIN=local (no toolchain download) and GOPROXY=off: nothing
// reaches the network. Go is Debian's golang-go (scripts/install-deps.sh).
RunResult go_pprof(const std::string& args);

// `go tool pprof -http` on `profile`, as go_pprof() runs pprof, serving on 127.0.0.1 at a port
// that was free, in a process group of its own, killed with the object. ok() once the server
// accepts connections (within 60 s); otherwise error() says why.
class PprofWebUi {
 public:
  explicit PprofWebUi(const std::string& profile);
  ~PprofWebUi();
  PprofWebUi(const PprofWebUi&) = delete;
  PprofWebUi& operator=(const PprofWebUi&) = delete;
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  std::string url(const std::string& page) const;  // "http://127.0.0.1:PORT/ui/PAGE"

 private:
  TempDir home_;
  int pid_ = -1, port_ = 0;
  std::string error_;
};

struct PprofRawSample {
  std::vector<int64_t> values;            // in the order of the sample types
  std::vector<uint64_t> location_ids;     // leaf first
  std::vector<std::string> functions;     // the locations' function names, leaf first
  std::map<std::string, std::string> labels;  // string and numeric labels, "tid" -> "1234"
  bool has_function(const std::string& name) const;
  std::string label(const std::string& key) const;  // "" when absent
};

struct PprofRaw {
  std::vector<std::string> comments;
  std::string period_type;                // "off_cpu nanoseconds"
  int64_t period = 0;
  std::vector<std::string> sample_types;  // as printed: "off_cpu/nanoseconds[dflt]"
  std::vector<PprofRawSample> samples;
  std::map<uint64_t, std::string> location_functions;  // location id -> function name
  std::vector<std::string> mappings;      // the lines of the Mappings section
  int64_t total(size_t value_index) const;
};

// Parses `go tool pprof -raw` output; lines it does not understand are an error in `error`.
PprofRaw parse_pprof_raw(const std::string& text, std::string* error);

// A row of `go tool pprof -top`: flat and cumulative values as printed ("202259595ns", "10").
struct PprofTopRow {
  std::string flat, cum;
};
struct PprofTop {
  std::string file;   // "File: wl_pipe": the profile's main binary (mapping 1)
  std::string type;   // "Type: off_cpu"
  std::string total;  // "Showing nodes accounting for X, ..% of TOTAL total": TOTAL
  std::map<std::string, PprofTopRow> rows;  // by function name
};
PprofTop parse_pprof_top(const std::string& text);

// A sample of `go tool pprof -traces` (github.com/google/pprof's printTraces): its labels,
// its value as printed ("201481763ns" with -unit=ns, "10" for a count), and its stack, leaf
// first, as the lines under the labels name it.
//   -----------+-------------------------------------------------------
//         comm:  wl_pipe
//          tid:  4242
//   201481763ns   wl_pipe
//                 wl_send_message
struct PprofTrace {
  std::map<std::string, std::string> labels;  // string and numeric labels, "tid" -> "4242"
  std::string value;
  std::vector<std::string> functions;  // leaf first
  std::string label(const std::string& key) const;  // "" when absent
  // The first position of `name` in functions, functions.size() when absent.
  size_t position(const std::string& name, size_t from = 0) const;
};
struct PprofTraces {
  std::string file, type;  // as PprofTop's
  std::vector<PprofTrace> traces;
};
// Lines between two separators that are neither labels nor stack lines are an error in `error`.
PprofTraces parse_pprof_traces(const std::string& text, std::string* error);

}  // namespace offwake::test
