#!/usr/bin/env bash
# Overhead benchmark of system-wide recording (issue 8): see scripts/bench-overhead.py.
#   usage: scripts/bench-overhead.sh BUILD_DIR [--rounds N] [--ops N] [--baseline [LABEL=]PATH] ...
exec python3 "$(dirname "$0")/bench-overhead.py" "$@"
