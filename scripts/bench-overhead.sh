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

declare -A sum all
names=(none offwake offwake-timeline perf-sched)
for ((r = 1; r <= rounds; r++)); do
  for name in "${names[@]}"; do
    case $name in
      none) v=$(one) ;;
      offwake) v=$(one "$offwake" record -a -q -o "$tmp/offwake.data") ;;
      offwake-timeline) v=$(one "$offwake" record -a -q --timeline -o "$tmp/timeline.data") ;;
      perf-sched) v=$(one perf record -a -g -q -e sched:sched_switch -e sched:sched_waking -o "$tmp/perf.data") ;;
    esac
    sum[$name]=$(( ${sum[$name]:-0} + v ))
    all[$name]="${all[$name]:-} $v"
    echo "round $r: $name $v ns/handoff"
  done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=${sum[none]}
base_median=$(median "${all[none]}")
for name in "${names[@]}"; do
  awk -v n="$name" -v s="${sum[$name]}" -v b="$base" -v r="$rounds" -v m="$(median "${all[$name]}")" -v bm="$base_median" \
    'BEGIN { printf "%-17s mean %8.0f ns/handoff  ratio %.2f   median %8.0f  ratio %.2f\n", n, s / r, s / b, m, m / bm }'
done
