#!/usr/bin/env bash
# Overhead of system-wide recording on a context-switch-heavy workload (two threads handing a
# token through a condition variable), as the ratio of ns per handoff to the untraced run.
# Rounds alternate between the tracers, so that all ratios come from the same sitting.
#   usage: scripts/bench-overhead.sh BUILD_DIR [ROUNDS] [HANDOFFS]
set -euo pipefail
build=$(cd "${1:?usage: bench-overhead.sh BUILD_DIR [ROUNDS] [HANDOFFS]}" && pwd)
rounds=${2:-5}
handoffs=${3:-200000}
pingpong="$build/tests/workloads/wl_pingpong -n $handoffs"
offwake="$build/perf-plugin/perf-offwake"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

one() {  # one() TRACER-COMMAND...: ns per handoff with the tracer running system-wide
  local pid=
  if [ $# -gt 0 ]; then
    "$@" >/dev/null 2>"$tmp/tracer.err" & pid=$!
    sleep 1.5
  fi
  $pingpong | sed -n 's/.*ns_per_handoff=//p'
  if [ -n "$pid" ]; then
    kill -INT "$pid"
    local rc=0; wait "$pid" || rc=$?
    # perf record re-raises SIGINT after writing its file (130); ours exits 0.
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 130 ]; then cat "$tmp/tracer.err" >&2; return 1; fi
  fi
}

declare -A sum
names=(none offwake perf-sched)
for ((r = 1; r <= rounds; r++)); do
  for name in "${names[@]}"; do
    case $name in
      none) v=$(one) ;;
      offwake) v=$(one "$offwake" record -a -q -o "$tmp/offwake.data") ;;
      perf-sched) v=$(one perf record -a -g -q -e sched:sched_switch -e sched:sched_waking -o "$tmp/perf.data") ;;
    esac
    sum[$name]=$(( ${sum[$name]:-0} + v ))
    echo "round $r: $name $v ns/handoff"
  done
done
base=${sum[none]}
for name in "${names[@]}"; do
  awk -v n="$name" -v s="${sum[$name]}" -v b="$base" -v r="$rounds" \
    'BEGIN { printf "%-11s %8.0f ns/handoff  ratio %.2f\n", n, s / r, s / b }'
done
