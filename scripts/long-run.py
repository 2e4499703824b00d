#!/usr/bin/env python3
"""Long runs of a system-wide `perf offwake record`, as documented checks (issue 13, item 6).

  scripts/long-run.py steady BUILD_DIR [--seconds 600] [--out DIR] [--record-args "--map-size N"]
      A system-wide record for SECONDS under steady load: a pipe ping-pong between two
      processes (bench_pipe) and a churn of short-lived processes (one every 20 ms), both at
      nice 19, and a truth workload (wl_pipe, one 100 ms block at a time) that times its own
      blocking. Prints the
      recorder's RSS at the start and at the end (and its peak), the losses the recorder
      counted, and the truth workload's recorded blocked time against its own: anything lost
      that the recorder did not count would show up there.

  scripts/long-run.py storm BUILD_DIR [--processes 2500] [--threads 2500] [--out DIR] [--record-args ...]
      A system-wide record during a storm of short-lived processes and threads
      (tests/e2e/fork_storm: each blocks once for 5 ms in its own function, then exits). Prints
      how many of them the recording has, and what share of their user frames Debian's
      `perf script` symbolizes.

Run as root from the source tree after `make -f Makefile.perf build`. Exit status 0 when the
figures meet the targets (RSS flat within 10%, truth within 5%; >= 95% of the storm's user
frames symbolized), 1 otherwise.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from proc_status import rss_kib


def start_recorder(build, out, extra):
    binary = os.path.join(build, "perf-plugin", "perf-offwake")
    err = open(out + ".err", "w")
    rec = subprocess.Popen([binary, "record", "-a", "-o", out] + extra, stderr=err, stdout=subprocess.DEVNULL)
    # Attached once the recorder has written its header into the output's temporary file
    # (it writes there and renames at the end), or after 20 s at most.
    deadline = time.time() + 20
    directory, base = os.path.split(os.path.abspath(out))
    while time.time() < deadline and rec.poll() is None:
        if any(name.startswith(base + ".tmp") for name in os.listdir(directory)):
            break
        time.sleep(0.1)
    time.sleep(1.0)
    if rec.poll() is not None:
        sys.exit(f"long-run: the recorder exited at once:\n{open(out + '.err').read()}")
    return rec


def thread_blocked_ns(build, data, tid):
    """All the blocked time of thread `tid` in the recording (perf offwake report --folded)."""
    binary = os.path.join(build, "perf-plugin", "perf-offwake")
    r = subprocess.run([binary, "report", "-i", data, "--folded", "--tid", str(tid)], capture_output=True,
                       text=True, check=True)
    return sum(int(line.rpartition(" ")[2]) for line in r.stdout.splitlines() if line.strip())


def private_copy(path, out):
    """The workloads run from a copy: a rebuild during the run must not change the binary that
    the recording's symbols are read from."""
    dest = os.path.join(out, os.path.basename(path))
    subprocess.run(["cp", path, dest], check=True)
    return dest


def steady(args):
    build, out = args.build, args.out
    data = os.path.join(out, "steady.data")
    bench_pipe = private_copy(os.path.join(build, "tests", "bench", "bench_pipe"), out)
    wl_pipe = private_copy(os.path.join(build, "tests", "workloads", "wl_pipe"), out)
    print(f"long-run steady: system-wide record for {args.seconds} s into {data}", flush=True)
    rec = start_recorder(build, data, ["--duration", str(args.seconds)] + args.record_args.split())
    t0 = time.time()
    # The load runs at nice 19: it takes the CPU time nothing else wants, steadily, and leaves
    # the rest of the machine (another test run, say) its timing.
    load = [
        subprocess.Popen(["nice", "-n", "19", bench_pipe, "-n", "100000000000", "-c", "-1"],
                         stdout=subprocess.DEVNULL),
        subprocess.Popen(["nice", "-n", "19", "bash", "-c", "while :; do /bin/true; sleep 0.02; done"]),
    ]
    # The truth workload ends well before the record does: 100 ms blocks for all but 30 s.
    blocks = max(10, int((args.seconds - 30) * 10))
    truth_run = subprocess.Popen([wl_pipe, "-n", str(blocks), "-m", "100"], stdout=subprocess.PIPE, text=True)
    samples = []
    while rec.poll() is None:
        kib = rss_kib(rec.pid)
        if kib is not None:
            samples.append((time.time() - t0, kib))
            print(f"  t={samples[-1][0]:6.0f} s  recorder RSS {kib} KiB", flush=True)
        time.sleep(min(30, max(1, args.seconds / 20)))
    for p in load:
        p.kill()
        p.wait()
    truth_out, _ = truth_run.communicate()
    err = open(data + ".err").read()
    print(err, end="")
    ok = rec.returncode == 0
    if not ok:
        print(f"long-run steady: the recorder exited with {rec.returncode}")
    m = re.search(r"truth tid=(\d+) function=(\S+) blocked_ns=(\d+) count=(\d+)", truth_out)
    if not m:
        sys.exit(f"long-run steady: no truth line from wl_pipe: {truth_out!r}")
    tid, function, truth_ns, count = int(m[1]), m[2], int(m[3]), int(m[4])
    # The truth thread (wl_pipe's child) blocks only in its read: all its blocked time counts.
    recorded = thread_blocked_ns(build, data, tid)
    error = (recorded - truth_ns) / truth_ns
    # RSS while recording: the first sample after 10% of the run (BPF loaded, /proc synthesized)
    # against the last before the end. After the end the recorder reads the aggregation map and
    # writes the samples: that peak grows with the stacks recorded, and is printed apart.
    recording = [s for s in samples if args.seconds * 0.1 <= s[0] <= args.seconds - 5] or samples
    start_kib, end_kib = recording[0][1], recording[-1][1]
    peak = max(k for _, k in recording)
    growth = (end_kib - start_kib) / start_kib
    writing = [k for t, k in samples if t > args.seconds - 5]
    print(f"long-run steady: recorder RSS while recording: {start_kib} KiB at t={recording[0][0]:.0f} s, "
          f"{end_kib} KiB at t={recording[-1][0]:.0f} s ({growth:+.1%}), peak {peak} KiB"
          + (f"; {max(writing)} KiB while writing the samples" if writing else ""))
    print(f"long-run steady: truth {function} tid {tid}: {count} blocks, {truth_ns} ns; recorded {recorded} ns "
          f"({error:+.2%})")
    perf = subprocess.run(["perf", "report", "-i", data, "--stdio", "--header-only"], capture_output=True, text=True)
    lost = re.findall(r"lost.*", perf.stdout, re.I)
    stats = subprocess.run(["perf", "report", "-i", data, "--stats"], capture_output=True, text=True)
    lost_samples = re.findall(r"LOST_SAMPLES events:\s+(\d+)", stats.stdout)
    print(f"long-run steady: perf report --stats: LOST_SAMPLES events {lost_samples[0] if lost_samples else 0}")
    ok = ok and abs(growth) <= 0.10 and abs(error) <= 0.05
    print("long-run steady: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def storm(args):
    build, out = args.build, args.out
    data = os.path.join(out, "storm.data")
    fork_storm = private_copy(os.path.join(build, "tests", "e2e", "fork_storm"), out)
    print(f"long-run storm: {args.processes} processes and {args.threads} threads during a system-wide record",
          flush=True)
    rec = start_recorder(build, data, args.record_args.split())
    r = subprocess.run([fork_storm, "-n", str(args.processes), "-t", str(args.threads), "-b", "100"],
                       capture_output=True, text=True)
    storm_pid_line = r.stdout.strip()
    time.sleep(1)
    rec.send_signal(signal.SIGINT)
    rec.wait()
    print(open(data + ".err").read(), end="")
    print(f"long-run storm: fork_storm: {storm_pid_line}")
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,tid,event,ip,sym,dso"],
                            capture_output=True, text=True)
    if script.returncode != 0:
        sys.exit(f"long-run storm: perf script failed: {script.stderr}")
    # perf script: a header line per sample, then one indented line per frame.
    tids, frames, named, leaves = set(), 0, 0, {"fs_child_waits": 0, "fs_thread_waits": 0}
    inside = False
    for line in script.stdout.splitlines():
        if not line.startswith(("\t", " ")) or re.match(r"^\s*\S+\s+\d+/\d+\s", line):
            head = line.split()
            inside = bool(head) and head[0] == "fork_storm" and "offwake-time:" in line
            if inside:
                tids.add(head[1].split("/")[1])
            continue
        if not inside:
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            continue
        ip = int(parts[0], 16)
        if ip >= 0xffff800000000000:
            continue  # kernel frames are not the question here
        frames += 1
        if not parts[1].startswith("[unknown]"):
            named += 1
        for leaf in leaves:
            if parts[1].startswith(leaf + "+") or parts[1].startswith(leaf + " "):
                leaves[leaf] += 1
    share = named / frames if frames else 0.0
    print(f"long-run storm: {len(tids)} fork_storm threads in the recording (of {args.processes + args.threads} "
          f"started, and the parent); in fs_child_waits {leaves['fs_child_waits']}, in fs_thread_waits "
          f"{leaves['fs_thread_waits']}")
    print(f"long-run storm: {named} of {frames} user frames symbolized ({share:.2%}) by Debian perf's perf script")
    ok = rec.returncode == 0 and share >= 0.95
    print("long-run storm: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("steady")
    s.add_argument("build")
    s.add_argument("--seconds", type=int, default=600)
    s.add_argument("--out")
    t = sub.add_parser("storm")
    t.add_argument("build")
    t.add_argument("--processes", type=int, default=2500)
    t.add_argument("--threads", type=int, default=2500)
    t.add_argument("--out")
    for p in (s, t):
        p.add_argument("--record-args", default="", help="more options for perf offwake record")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("long-run: run as root (BPF and perf events)")
    args.build = os.path.abspath(args.build)
    args.out = args.out or tempfile.mkdtemp(prefix="offwake-long-run-")
    os.makedirs(args.out, exist_ok=True)
    return steady(args) if args.what == "steady" else storm(args)


if __name__ == "__main__":
    sys.exit(main())
