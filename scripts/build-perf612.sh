#!/usr/bin/env bash
# Builds perf 6.12 from Debian's linux-source-6.12, as a second reader of our perf.data files
# (Debian 12's own perf is 6.1). The end-to-end identity tests read every recording with both.
# Idempotent: if PREFIX/perf-6.12/perf exists and runs, it does nothing.
#   usage: scripts/build-perf612.sh [PREFIX]   (PREFIX defaults to build/deps)
# Takes about 8 minutes on two cores the first time.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$top/build/deps}
kver=6.12
out=$prefix/perf-$kver
perf=$out/perf

# "Runs" means it reports its version: a tree that could not tell perf its version builds a
# perf that says "perf version ", so that is rebuilt too.
if [ -x "$perf" ] && "$perf" version 2>/dev/null | grep -q "^perf version $kver\."; then
  exit 0
fi

# What perf's own Makefiles need on top of the project's dependencies (install-deps.sh).
packages=(flex bison libcap-dev libslang2-dev libunwind-dev libssl-dev libelf-dev libdw-dev
  zlib1g-dev libzstd-dev libtraceevent-dev libbpf-dev clang llvm python3 make gcc pkg-config
  xz-utils "linux-source-$kver")
. "$top/scripts/apt-install-missing.sh"
apt_install_missing build-perf612 "${packages[@]}"

# The same tree install-deps.sh extracts for libperf. Perf needs three things outside tools/
# (tools/perf/MANIFEST lists them, with more that an x86 build does not use):
# scripts/bpf_doc.py, which generates libbpf's helper definitions; kernel/bpf/disasm.[ch], for
# the bpftool that generates perf's BPF skeletons; and arch/arm64/tools, from which perf
# generates arm64 system register definitions on every architecture. Each piece is extracted
# once, only if missing.
src=$prefix/src
tree=$src/linux-source-$kver
tarball=/usr/src/linux-source-$kver.tar.xz
mkdir -p "$src"
want=()
[ -d "$tree/tools/perf" ] || want+=("linux-source-$kver/tools")
[ -f "$tree/Makefile" ] || want+=("linux-source-$kver/Makefile")
[ -f "$tree/scripts/bpf_doc.py" ] || want+=("linux-source-$kver/scripts/bpf_doc.py")
[ -f "$tree/kernel/bpf/disasm.c" ] || want+=("linux-source-$kver/kernel/bpf/disasm.c" "linux-source-$kver/kernel/bpf/disasm.h")
[ -d "$tree/arch/arm64/tools" ] || want+=("linux-source-$kver/arch/arm64/tools")
if ((${#want[@]})); then
  echo "build-perf612: extracting ${want[*]#linux-source-$kver/} from linux-source-$kver"
  tar -C "$src" -xJf "$tarball" "${want[@]}"
fi

# perf takes its version from "make -C ../.. kernelversion", which needs the whole kernel
# build system, unless the tree is not a git checkout and has a PERF-VERSION-FILE at its top
# (as perf's own source tarballs do). Write that from the top Makefile.
if [ ! -f "$tree/PERF-VERSION-FILE" ]; then
  version=$(awk -F' = ' '$1 == "VERSION" { v = $2 } $1 == "PATCHLEVEL" { p = $2 }
    $1 == "SUBLEVEL" { s = $2 } END { print v "." p "." s }' "$tree/Makefile")
  echo "#define PERF_VERSION \"$version\"" >"$tree/PERF-VERSION-FILE"
fi

echo "build-perf612: building perf $kver into $out (about 8 minutes)"
mkdir -p "$out"
log=$out/build.log
if ! make -C "$tree/tools/perf" O="$out" -j "$(nproc)" \
    BUILD_BPF_SKEL=1 NO_LIBPYTHON=1 NO_LIBPERL=1 NO_LIBBABELTRACE=1 NO_GTK2=1 NO_JVMTI=1 \
    >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "build-perf612: build failed; the full log is $log" >&2
  exit 1
fi
if ! "$perf" version 2>/dev/null | grep -q "^perf version $kver\."; then
  echo "build-perf612: $perf was built but does not run; see $log" >&2
  exit 1
fi
echo "build-perf612: ok ($("$perf" version))"
