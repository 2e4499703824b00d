#!/usr/bin/env bash
# The whole suite RUNS times in a row while a nice-19 build of the project runs beside it, over
# and over (make -f Makefile.perf test-under-build): the tests must not assume an idle machine.
# The load is a parallel build of a private copy of the tree, compiled from scratch each round
# (ccache off), at nice 19 as a developer's build would be; it stops with the script.
#   usage: scripts/test-under-build.sh BUILD_DIR DEPS_DIR [RUNS]   (default 3 runs; as root)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: test-under-build.sh BUILD_DIR DEPS_DIR [RUNS]}" && pwd)
deps=$(cd "${2:?usage: test-under-build.sh BUILD_DIR DEPS_DIR [RUNS]}" && pwd)
runs=${3:-3}
jobs=$(nproc)

load=$(mktemp -d /tmp/perf-offwake-load.XXXXXX)
loader=
cleanup() {
  if [ -n "$loader" ]; then
    kill -- -"$loader" 2>/dev/null || true
    wait "$loader" 2>/dev/null || true
  fi
  rm -rf "$load"
}
trap cleanup EXIT

# The tree as committed (git archive: no build output), configured once.
git -C "$top" archive HEAD | tar -x -C "$load"
cmake -S "$load" -B "$load/build" -DOFFWAKE_DEPS_PREFIX="$deps" >/dev/null
# In a process group of its own, so that the whole build goes with it.
set -m
(
  export CCACHE_DISABLE=1
  while :; do
    nice -n 19 cmake --build "$load/build" -j "$jobs" >/dev/null 2>&1 || true
    cmake --build "$load/build" --target clean >/dev/null 2>&1 || true
  done
) &
loader=$!
set +m
echo "test-under-build: a nice-19 build of the project (-j $jobs) runs beside the tests (pid $loader)"

for ((i = 1; i <= runs; ++i)); do
  echo "test-under-build: run $i of $runs"
  log=$build/ctest-under-build-$i.log
  if ! (cd "$build" && set -o pipefail && ctest --output-on-failure -j 1 2>&1 | tee "$log" | grep -E '^[0-9]+% tests passed|\*\*\*Failed|Failed  |Timeout'); then
    echo "test-under-build: run $i failed (log: $log)" >&2
    exit 1
  fi
  bash "$top/scripts/check-skips.sh" "$log"
done
echo "test-under-build: $runs runs in a row passed"
