// A Profile as a gzipped profile.proto (github.com/google/pprof/proto/profile.proto), the
// format go tool pprof and continuous-profiling back ends (Parca, Pyroscope, Grafana) read.
//
// Sample types: off_cpu/nanoseconds and blocks/count; with on-CPU samples also
// cpu/nanoseconds. A sample's locations are the off-wake path of --folded and --svg, leaf
// first: the last waker's comm, the waker's stack root first, "--", the blocked stack leaf
// first, the blocked thread's comm (the root); further hops of a wakeup chain come before
// (above) the waker. An on-CPU sample is its stack and comm. The labels name the thread (comm,
// pid, tid), the state, and the waker (waker_comm, waker_tid, waker_context). Functions carry
// the symbol names; mappings the DSO path and build id.
#pragma once

#include "perfdata/bytes.h"
#include "report/profile.h"
#include "util/result.h"

namespace offwake::report {

// The encoded profile.proto, not compressed (for tests).
perfdata::Bytes encode_pprof_proto(const Profile& profile);
// ... gzipped, as pprof files are.
Result<perfdata::Bytes> encode_pprof(const Profile& profile);

}  // namespace offwake::report
