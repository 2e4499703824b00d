#!/usr/bin/env bash
# make -f Makefile.perf demo: record a bundled workload (two processes talking through a pipe)
# with the installed `perf offwake`, then show it with our own report and with the real perf, and
# draw its off-wake flame graph.
#   usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: demo.sh BUILD_DIR}" && pwd)
out=$(mktemp -d /tmp/perf-offwake-demo.XXXXXX)
cd "$out"
echo "== perf offwake record -o perf.data -- wl_pipe -n 10   (in $out)"
perf offwake record -o perf.data -- "$build/tests/workloads/wl_pipe" -n 10
echo
echo "== perf offwake report   (blocked stacks by time, each with its top wakers)"
perf offwake report -i perf.data 2>&1 | head -40
echo
echo "== perf report --stdio --no-children --sort comm,sym -G"
perf report --stdio --no-children --sort comm,sym -G 2>&1 | head -60
echo
echo "== perf script (first blocked sample and its waker)"
# The first blocked sample whose stack names the workload, and the waker sample after it.
perf script -F comm,pid,tid,period,event,ip,sym |
  awk -v RS= '!found && /offwake-time/ && /wl_wait_for_message/ {found=1; print; next} found == 1 {print; found=2}'
echo
echo "== perf offwake report --svg offwake.svg"
perf offwake report -i perf.data --svg offwake.svg
echo
echo "The recording stays in $out/perf.data."
echo "Its off-wake flame graph is $out/offwake.svg: open it in a browser (click to zoom, Ctrl-F to search)."
