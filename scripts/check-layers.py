#!/usr/bin/env python3
"""Checks the data flow of perf-plugin/: which folder may include which.

    producers of blocks      bpf/ (the BPF programs)   sched/ (tracepoints paired in user space)
    the block model          blocks/
    blocks -> samples        samples/
    perf.data                perfdata/ (and callchain/, synth/, util/ below it)
    user stacks from CFI     unwind/ (tables for BPF; stack copies unwound with libdwfl)
    a recording              tracking/ (libperf), record/ (the back ends, the workload)
    readers                  symbolize/, report/, script/
    the sub-commands         commands/, main.cpp

A folder may include its own headers and those of the folders listed for it below. The readers
and the pairer therefore cannot reach libbpf (bpf/) or libperf (tracking/), nor the readers the
recorder (record/). Usage: check-layers.py [SOURCE_DIR]; exits 1 and names each include that
breaks the rule.
"""
import pathlib
import re
import sys

BASE = {"util", "callchain", "perfdata"}
ALLOWED = {
    "util": set(),
    "callchain": {"util"},
    "perfdata": {"util", "callchain"},
    "synth": BASE,
    "symbolize": BASE | {"synth", "unwind"},  # unwind/: .eh_frame's functions name stripped code
    "unwind": BASE | {"synth"},
    "blocks": BASE,
    "samples": BASE | {"blocks", "synth"},
    "sched": BASE | {"blocks", "synth"},
    "bpf": BASE | {"blocks"},
    "tracking": BASE | {"sched"},
    "record": BASE | {"blocks", "samples", "synth", "sched", "bpf", "tracking", "unwind"},
    "report": BASE | {"blocks", "samples", "synth", "symbolize"},
    "script": BASE | {"blocks", "samples", "synth", "symbolize", "report"},
    "commands": None,  # anything
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.M)


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent) / "perf-plugin"
    bad = 0
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".in") or path.parent == root:
            continue
        folder = path.relative_to(root).parts[0]
        if folder not in ALLOWED:
            print(f"check-layers: {path.relative_to(root)}: folder {folder}/ has no place in the data flow", file=sys.stderr)
            bad += 1
            continue
        allowed = ALLOWED[folder]
        if allowed is None:
            continue
        for m in INCLUDE.finditer(path.read_text()):
            dep = m.group(1)
            if dep != folder and dep not in allowed:
                print(f"check-layers: {path.relative_to(root)} includes {dep}/, which {folder}/ may not", file=sys.stderr)
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
