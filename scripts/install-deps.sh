#!/usr/bin/env bash
# Installs everything perf-offwake needs to build on Debian 12, from nothing, and with --tests
# what only the tests need on top: the readers they check our output with (go tool pprof,
# headless Chromium, perf 6.12 built from the kernel source package, about 8 minutes), and the
# software whose stacks they record (nginx, wrk). With --bench, what the overhead benchmark
# (scripts/bench-overhead.py) runs: PostgreSQL and pgbench, bpftrace and perf 6.12 (--off-cpu).
# Idempotent: a second run with everything present does no network work and no rebuild.
#   usage: scripts/install-deps.sh [--tests] [--bench] [PREFIX]   (PREFIX defaults to build/deps)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
tests=0
bench=0
while [ $# -gt 0 ]; do
  case $1 in
    --tests) tests=1 ;;
    --bench) bench=1 ;;
    -*) echo "install-deps: unknown option $1 (usage: install-deps.sh [--tests] [--bench] [PREFIX])" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
prefix=${1:-$top/build/deps}
kver=6.12

packages=(
  build-essential cmake pkg-config make xz-utils
  clang llvm bpftool libbpf-dev libelf-dev libdw-dev zlib1g-dev libzstd-dev
  libtraceevent-dev python3 python3-dev libgtest-dev asciidoctor man-db libiberty-dev
  linux-perf "linux-source-$kver" binutils
)
test_packages=(
  golang-go  # go tool pprof, the reader the --pprof tests check against
  chromium fonts-dejavu-core  # headless Chromium renders and drives the flame graph in the tests
  # Complete user stacks of code without frame pointers (tests/e2e/complete_stacks_test.cpp):
  # Debian's own such software under load, and the C library's full symbol table, so that perf
  # script names start_thread, clone3 and __libc_start_call_main, where stacks must end.
  nginx wrk libc6-dbg
  nodejs  # code without CFI (V8's builtins) and JIT frames, walked by frame pointer
)
bench_packages=(
  # The benchmark's real database: it makes its own cluster in a temporary directory with
  # Debian's initdb and pg_ctl (postgresql-NN), and drives it with pgbench (postgresql-client-NN).
  # The package's own "main" cluster, if the install creates one, is left alone.
  postgresql
  bpftrace  # the same four stacks in bpftrace (../shared/bench/offwake4.bt), a peer's cost
)
if ((tests)); then packages+=("${test_packages[@]}"); fi
if ((bench)); then packages+=("${bench_packages[@]}"); fi

. "$top/scripts/apt-install-missing.sh"
apt_install_missing install-deps "${packages[@]}"

# libperf is not packaged in Debian 12: build it from the kernel source package's tools/.
if [ ! -f "$prefix/lib64/libperf.a" ] || [ ! -f "$prefix/lib64/libapi.a" ] || [ ! -f "$prefix/include/perf/evlist.h" ]; then
  src=$prefix/src
  mkdir -p "$src"
  if [ ! -d "$src/linux-source-$kver/tools/lib/perf" ]; then
    echo "install-deps: extracting tools/ from linux-source-$kver"
    tar -C "$src" -xJf "/usr/src/linux-source-$kver.tar.xz" "linux-source-$kver/tools"
  fi
  echo "install-deps: building libperf into $prefix"
  make -s -C "$src/linux-source-$kver/tools/lib/perf" DESTDIR="$prefix" prefix=/ \
    install_headers install_lib >/dev/null
  # libperf.a leaves its fdarray helpers to libapi.a, built alongside it but not installed.
  install -m 0644 "$src/linux-source-$kver/tools/lib/api/libapi.a" "$prefix/lib64/libapi.a"
fi

# libsubcmd, perf's own option parser (parse_options, usage_with_options), from the same tree:
# every sub-command parses its options with it, as perf's own commands do.
# (Its Makefile installs into lib/, not lib64/.) Its headers need the tree's tools/include.
if ! ar t "$prefix/lib/libsubcmd.a" 2>/dev/null | grep -q tools-lib-string.o ||
   [ ! -f "$prefix/include/subcmd/parse-options.h" ] ||
   [ ! -f "$prefix/src/linux-source-$kver/tools/include/linux/kernel.h" ]; then
  if [ ! -d "$prefix/src/linux-source-$kver/tools/lib/subcmd" ]; then
    echo "install-deps: extracting tools/ from linux-source-$kver"
    mkdir -p "$prefix/src"
    tar -C "$prefix/src" -xJf "/usr/src/linux-source-$kver.tar.xz" "linux-source-$kver/tools"
  fi
  echo "install-deps: building libsubcmd into $prefix"
  tools=$prefix/src/linux-source-$kver/tools
  make -s -C "$tools/lib/subcmd" DESTDIR="$prefix" prefix=/ install_headers install_lib >/dev/null
  # perf links tools/lib/string.c (strlcpy, which glibc 2.36 lacks) and ctype.c beside it.
  for f in string ctype; do
    gcc -c -O2 -fPIC -D_GNU_SOURCE -I"$tools/include" "$tools/lib/$f.c" -o "$prefix/src/tools-lib-$f.o"
  done
  ar rcs "$prefix/lib/libsubcmd.a" "$prefix/src/tools-lib-string.o" "$prefix/src/tools-lib-ctype.o"
fi

# tracefs is needed by perf and by tracepoint attachment; it is not mounted at boot here.
if [ "$(id -u)" -eq 0 ] && [ ! -e /sys/kernel/tracing/events ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
# perf 6.12, the second reader of the end-to-end tests (Debian's perf is 6.1) and the
# benchmark's perf --off-cpu (6.1 has no BPF skeletons); cached in $prefix.
if ((tests || bench)); then bash "$top/scripts/build-perf612.sh" "$prefix"; fi
echo "install-deps: ok"
