#!/usr/bin/env python3
"""How often does perf offwake report's standard error cover the true error of a sampled
recording (perf offwake record --sample-period)?

Runs the test workload of many short blocks (tests/workloads/wl_short_blocks: threads that
block 50 to 300 us at a time and time it themselves) under `perf offwake record
--sample-period PERIOD` RUNS times, reads each recording with `perf offwake report
--per-thread`, and compares each thread's estimate with the workload's own measurement:

  error    estimate - truth, in standard errors (the report's StdErr of that thread)
  covered  how many threads' errors lie within 1, 2 and 2.6 standard errors

For a sound estimator about 68%, 95% and 99% of them do. A run is covered when all its
threads are within 2 standard errors. Exact mode has errors of its own (a block ended late
loses its run-queue wait, about 0.1%), far below the sampling error at this period.

  usage: scripts/check-sampling.py BUILD_DIR [--runs 20] [--period 500] [--seconds 5]
  (as root; e.g. scripts/check-sampling.py build/cmake)
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROW = re.compile(r"^\s+([\d.]+) (ns|us|ms|s)\s+([\d.]+) (ns|us|ms|s)\s+[\d.]+%\s+\d+ .* \d+/(\d+): \d+ stacks$")
TRUTH = re.compile(r"^truth tid=(\d+) function=(\S+) blocked_ns=(\d+) count=(\d+)")
UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def fail(msg):
    print(f"check-sampling: {msg}", file=sys.stderr)
    sys.exit(1)


def one_run(offwake, workload, period, seconds, data):
    rec = subprocess.run([offwake, "record", "-q", "--sample-period", str(period), "-o", data, "--", workload,
                          "-s", str(seconds)], capture_output=True, text=True)
    if rec.returncode != 0:
        fail(f"record failed ({rec.returncode}): {rec.stderr.strip()}")
    truth = {}
    for line in rec.stdout.splitlines():
        m = TRUTH.match(line)
        if m:
            truth[int(m.group(1))] = (m.group(2), int(m.group(3)), int(m.group(4)))
    rep = subprocess.run([offwake, "report", "--per-thread", "--stdio", "-i", data], capture_output=True, text=True)
    if rep.returncode != 0:
        fail(f"report failed ({rep.returncode}): {rep.stderr.strip()}")
    rows = {}
    for line in rep.stdout.splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m.group(5))] = (float(m.group(1)) * UNIT[m.group(2)], float(m.group(3)) * UNIT[m.group(4)])
    out = []
    for tid, (function, truth_ns, count) in sorted(truth.items()):
        if tid not in rows:
            fail(f"thread {tid} ({function}) is not in the report")
        est, se = rows[tid]
        if se <= 0:
            fail(f"thread {tid}: no standard error in the report")
        out.append((tid, function, truth_ns, count, est, se, (est - truth_ns) / se))
    return out


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default=os.path.join(top, "build", "cmake"), help="the build directory")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--period", type=float, default=500, help="--sample-period in microseconds (500)")
    ap.add_argument("--seconds", type=float, default=5, help="the workload's length (5)")
    a = ap.parse_args()
    offwake = os.path.join(a.build, "perf-plugin", "perf-offwake")
    workload = os.path.join(a.build, "tests", "workloads", "wl_short_blocks")
    for path in (offwake, workload):
        if not os.access(path, os.X_OK):
            fail(f"{path} is missing: build first (make -f Makefile.perf build)")
    if a.runs < 1 or a.period <= 0 or a.seconds <= 0:
        fail("--runs, --period and --seconds must be positive")

    within = {1.0: 0, 2.0: 0, 2.6: 0}
    threads = runs_covered = 0
    with tempfile.TemporaryDirectory(prefix="check-sampling.") as tmp:
        data = os.path.join(tmp, "perf.data")
        print(f"{'run':>3} {'tid':>7} {'function':<15} {'truth ms':>10} {'estimate ms':>12} {'error %':>8} "
              f"{'stderr %':>8} {'error/SE':>8}")
        for run in range(1, a.runs + 1):
            rows = one_run(offwake, workload, a.period, a.seconds, data)
            covered = True
            for tid, function, truth_ns, count, est, se, z in rows:
                threads += 1
                for k in within:
                    within[k] += abs(z) <= k
                covered &= abs(z) <= 2.0
                print(f"{run:>3} {tid:>7} {function:<15} {truth_ns / 1e6:>10.2f} {est / 1e6:>12.2f} "
                      f"{100 * (est - truth_ns) / truth_ns:>+8.2f} {100 * se / truth_ns:>8.2f} {z:>+8.2f}", flush=True)
            runs_covered += covered
    print(f"\n{threads} thread estimates in {a.runs} runs, --sample-period {a.period:g} us, {a.seconds:g} s each:")
    for k, n in within.items():
        print(f"  within {k:g} standard errors: {n} of {threads} ({100 * n / threads:.1f}%)")
    print(f"  runs with every thread within 2 standard errors: {runs_covered} of {a.runs}")


if __name__ == "__main__":
    main()
