#!/bin/bash
# How long `perf offwake report` takes on a large recording (issue 10: --folded and --svg on
# 1,000,000 samples in under 10 s). Records a --timeline recording of a two-thread ping-pong
# (one offwake-time and one offwake-waker sample per handoff), then times the outputs.
#   scripts/bench-report.sh BUILD_DIR [HANDOFFS]      (as root; default 500000 handoffs)
set -euo pipefail
build=${1:?usage: scripts/bench-report.sh BUILD_DIR [HANDOFFS]}
handoffs=${2:-500000}
offwake=$build/perf-plugin/perf-offwake
tmp=$(mktemp -d /tmp/bench-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$offwake" record --timeline -o "$tmp/big.data" -- "$build/tests/workloads/wl_pingpong" -n "$handoffs" \
  > /dev/null 2> "$tmp/record.err"
grep -o 'Captured and wrote .*' "$tmp/record.err"
for out in "--stdio" "--folded" "--svg $tmp/big.svg" "--pprof $tmp/big.pb.gz"; do
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$offwake" report -i "$tmp/big.data" $out > /dev/null 2> "$tmp/report.err"
  end=$(date +%s.%N)
  printf 'perf offwake report %-8s %6.2f s\n' "${out%% *}" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
done
