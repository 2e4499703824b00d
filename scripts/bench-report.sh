#!/bin/bash
# How long `perf offwake report` takes on a large recording, and its peak memory (issue 10:
# --folded and --svg on 1,000,000 samples in under 10 s; issue 21: under 100 MB). Records a
# --timeline recording of a two-thread ping-pong (one offwake-time and one offwake-waker
# sample per handoff), then times each output and perf offwake script, which reads the same
# stream of samples.
#   scripts/bench-report.sh BUILD_DIR [HANDOFFS]      (as root; default 500000 handoffs)
set -euo pipefail
build=${1:?usage: scripts/bench-report.sh BUILD_DIR [HANDOFFS]}
handoffs=${2:-500000}
top=$(cd "$(dirname "$0")/.." && pwd)
offwake=$build/perf-plugin/perf-offwake
tmp=$(mktemp -d /tmp/bench-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$offwake" record --timeline -o "$tmp/big.data" -- "$build/tests/workloads/wl_pingpong" -n "$handoffs" \
  > /dev/null 2> "$tmp/record.err"
grep -o 'Captured and wrote .*' "$tmp/record.err"

# Runs a command with its output thrown away; prints its wall time, its CPU time (user and
# system: the wall time on a loaded machine says little) and its peak RSS (the kernel's
# ru_maxrss of the child, as /usr/bin/time -v gives it).
measure() {
  local label=$1
  shift
  python3 - "$label" "$@" <<'PY'
import resource, subprocess, sys, time
label, cmd = sys.argv[1], sys.argv[2:]
start = time.monotonic()
with open("/dev/null", "wb") as null:
    run = subprocess.run(cmd, stdout=null, stderr=subprocess.PIPE)
took = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
rss, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
print(f"{label:<34} {took:6.2f} s ({cpu:5.2f} s CPU) {rss:7.1f} MB peak RSS")
if run.returncode != 0:
    sys.stderr.write(run.stderr.decode(errors="replace"))
sys.exit(run.returncode)
PY
}

for out in "--stdio" "--folded" "--svg $tmp/big.svg" "--pprof $tmp/big.pb.gz"; do
  # shellcheck disable=SC2086
  measure "perf offwake report ${out%% *}" "$offwake" report -i "$tmp/big.data" $out
done
measure "perf offwake script (collapse)" "$offwake" script -i "$tmp/big.data" -s "$top/scripts/offwake-collapse.py"
