#!/usr/bin/env bash
# make -f Makefile.perf screenshot: the README's picture of an off-wake flame graph. Records
# the demo's workload (wl_pipe: a child blocks reading a pipe, its parent writes to it) with the
# built perf-offwake, writes the graph with `perf offwake report --svg`, and renders it with
# headless Chromium into docs/flamegraph.png, 1200 px wide, quantized to 256 colours (pngquant)
# and recompressed (optipng) to keep the repository small.
#   usage: scripts/flamegraph-screenshot.sh BUILD_DIR [OUTPUT.png]   (as root)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: flamegraph-screenshot.sh BUILD_DIR [OUTPUT.png]}" && pwd)
png=${2:-$top/docs/flamegraph.png}

. "$top/scripts/apt-install-missing.sh"
apt_install_missing flamegraph-screenshot chromium fonts-dejavu-core pngquant optipng

work=$(mktemp -d /tmp/perf-offwake-screenshot.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
# Relative names, so that the graph's subtitle reads like the README's commands.
PATH=$build/tests/workloads:$PATH "$build/perf-plugin/perf-offwake" record -o perf.data -- wl_pipe -n 10
"$build/perf-plugin/perf-offwake" report -i perf.data --svg offwake.svg

# The window as tall as the graph (the root element's height), at most 800 px.
height=$(grep -o -m1 '<svg [^>]*' offwake.svg | grep -o ' height="[0-9]*"' | grep -o '[0-9]*')
height=$((height > 800 ? 800 : height))
# Chromium complains on stderr of what a headless root session lacks (D-Bus): not errors here.
chromium --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
  --user-data-dir="$work/profile" --screenshot="$work/shot.png" --window-size="1200,$height" \
  "file://$work/offwake.svg" 2>/dev/null
pngquant --force --strip --quality=70-95 --output "$work/small.png" 256 "$work/shot.png"
optipng -quiet -o5 "$work/small.png"
mkdir -p "$(dirname "$png")"
install -m 0644 "$work/small.png" "$png"
echo "flamegraph-screenshot: wrote $png ($(stat -c %s "$png") bytes, 1200x$height)"
