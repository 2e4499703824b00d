#!/usr/bin/env python3
"""Overhead of system-wide off-CPU recording: perf offwake against its peers (issue 8).

Three workloads in which every op is one block and one wakeup (a pthread_cond ping-pong, a
pipe ping-pong between two processes, 64 threads taking turns on one futex) run under each
tracer in turn. Every tracer records the whole system; it is started before the workload
and stopped (SIGINT to its pid) after it. Rounds alternate the tracers, so that all figures
come from one sitting, and the table shows medians over the rounds:

  wall ns/op          the workload's own timing, and its ratio to the untraced median
  BPF ns/op           run_time_ns summed over the tracer's BPF programs (bpftool prog show,
                      kernel.bpf_stats_enabled=1), read right before and after the workload
  recorder CPU ns/op  user + system CPU time of the tracer process during the workload

Tracers without BPF (perf record, and perf offwake --backend tracepoint, which reads the same
tracepoints through perf's ring buffers) have no BPF ns/op ("-"): their cost is all in the
wall ratio and the recorder CPU.

Then, for perf offwake (and each --baseline), the time from SIGINT to a complete file holding
~100,000 aggregated keys, and the recorder's peak RSS.

  usage: scripts/bench-overhead.py BUILD_DIR [options]      (as root; see --help)
"""

import argparse
import glob
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATS_SYSCTL = "/proc/sys/kernel/bpf_stats_enabled"
PERF_VDSO_TEMP = "/tmp/perf-vdso.so-*"  # perf record's copy of the vDSO (util/vdso.c)
START = time.monotonic()


class BenchError(Exception):
    pass


class Interrupted(Exception):
    pass


def log(msg):
    print(f"[{time.monotonic() - START:5.0f}s] {msg}", file=sys.stderr, flush=True)


def fmt(v, digits=0):
    return "-" if v is None else f"{v:,.{digits}f}"


# ---------------------------------------------------------------------------------------------
# Child processes. Every child runs in its own session, so that a Ctrl-C at the terminal
# reaches only this script, which then stops the tracers in order. Our own SIGINT handler
# (installed in main) also makes sure that children start with SIGINT at its default: a
# disposition that is a handler is reset by exec, while an ignored one (a background job in a
# non-interactive shell) would be inherited, and SIGINT would reach nobody.

LIVE = {}  # pid -> (Popen, is_tracer)


def spawn(argv, stdout, stderr, tracer, text=False):
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, text=text,
                         start_new_session=True)
    LIVE[p.pid] = (p, tracer)
    return p


def wait_exit(p, timeout):
    """Waits for p to exit; returns (wait status, rusage), or None after timeout seconds.
    Status and rusage are None if the child was reaped already (by Popen.poll)."""
    if p.returncode is not None:
        LIVE.pop(p.pid, None)
        return None, None
    fd = os.pidfd_open(p.pid)
    try:
        if not select.select([fd], [], [], timeout)[0]:
            return None
    finally:
        os.close(fd)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    LIVE.pop(p.pid, None)
    return status, ru


def exit_ok(status):
    # perf record re-raises SIGINT after writing its file: 130 in a shell, -2 here.
    return os.waitstatus_to_exitcode(status) in (0, 130, -signal.SIGINT)


def describe_exit(status):
    code = os.waitstatus_to_exitcode(status)
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    wait_exit(p, 10)


def cleanup_children():
    """Tracers get SIGINT first (they detach and exit), then anything left is killed."""
    for p, tracer in list(LIVE.values()):
        if tracer and p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
    for p, tracer in list(LIVE.values()):
        if not tracer or wait_exit(p, 20) is None:
            kill_group(p)
        LIVE.pop(p.pid, None)


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:]).rstrip()
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# Kernel counters.

def cpu_ns(pid):
    """User + system CPU time of a whole process, in ns: the kernel's per-process CPU clock
    (the same time as utime + stime in /proc/PID/stat, which counts in 10 ms ticks)."""
    return time.clock_gettime_ns(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)


def bpf_progs():
    """id -> (run_time_ns, run_cnt) of every loaded BPF program."""
    out = subprocess.run(["bpftool", "prog", "show", "-j"], check=True, capture_output=True, text=True).stdout
    return {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in json.loads(out or "[]")}


def owned_prog_ids(pid):
    """Ids of the BPF programs that a process holds: program and link fds name them in fdinfo,
    and bpftool perf names those attached through perf event fds. (This bpftool has no "pids"
    field, and a diff of the ids before and after the start would also catch programs that
    others load meanwhile, such as a test suite running on the same machine.)"""
    ids = set()
    d = f"/proc/{pid}/fdinfo"
    try:
        names = os.listdir(d)
    except OSError:
        return ids
    for n in names:
        try:
            with open(f"{d}/{n}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except (OSError, ValueError):
            pass
    out = subprocess.run(["bpftool", "perf", "-j"], capture_output=True, text=True).stdout
    try:
        ids.update(a["prog_id"] for a in json.loads(out or "[]") if a.get("pid") == pid)
    except (ValueError, KeyError, TypeError):
        pass
    return ids


def bpf_sum(ids):
    progs = bpf_progs()
    return (sum(progs[i][0] for i in ids if i in progs), sum(progs[i][1] for i in ids if i in progs))


def read_vm(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def ensure_bpf_stats():
    with open(STATS_SYSCTL) as f:
        if f.read().strip() == "1":
            return
    log("kernel.bpf_stats_enabled was turned off by someone else; turning it on again")
    with open(STATS_SYSCTL, "w") as f:
        f.write("1")


def other_tracers():
    """Tracers left running by others: they add to every row."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in LIVE or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm in ("perf-offwake", "bpftrace", "perf"):
            found.append(f"{comm}[{pid}]")
    return found


# ---------------------------------------------------------------------------------------------
# Tracers and workloads.

class Tracer:
    def __init__(self, label, kind, argv=None, binary=None):
        self.label, self.kind, self.argv, self.binary = label, kind, argv or [], binary
        self.failure = None

    def command(self, output):
        return [a.replace("{OUT}", output) for a in self.argv]


TRACER_KEYS = ["offwake", "fp", "min-block", "user", "timeline", "chain4", "tracepoint", "bpftrace4", "bpftrace-floor",
               "perf"]
# Options that baselines (older perf-offwake binaries) may not have: their rows are skipped.
NEW_OFFWAKE_KEYS = {"chain4", "tracepoint", "fp"}


def make_tracers(args, offwakes):
    tracers = [Tracer("none", "none")]
    want = set(args.tracers.split(","))
    unknown = want - set(TRACER_KEYS)
    if unknown:
        raise BenchError(f"unknown tracer {', '.join(sorted(unknown))} (known: {','.join(TRACER_KEYS)})")
    variants = [("offwake", []), ("fp", ["--user-walker", "fp"]), ("min-block", ["--min-block", "1000"]), ("user", ["-u"]),
                ("timeline", ["--timeline"]), ("chain4", ["--chain-depth", "4"]),
                ("tracepoint", ["--backend", "tracepoint"])]
    for prefix, binary in offwakes:
        for key, extra in variants:
            if key in want and not (prefix and key in NEW_OFFWAKE_KEYS):
                label = prefix + "offwake" + ("" if not extra else " " + " ".join(extra))
                # --backend tracepoint loads no BPF program: it is attached like perf record.
                kind = "tracepoint" if key == "tracepoint" else "bpf"
                tracers.append(Tracer(label, kind, [binary, "record", "-a", "-q", "-o", "{OUT}"] + extra, binary))
    bpftrace = shutil.which(args.bpftrace)
    for key, script in (("bpftrace4", "offwake4.bt"), ("bpftrace-floor", "floor.bt")):
        if key not in want:
            continue
        path = os.path.join(args.bt_dir, script)
        if not bpftrace:
            print("bpftrace not installed: apt-get install bpftrace", flush=True)
        elif not os.path.exists(path):
            print(f"bpftrace script {path} not found (--bt-dir): skipped", flush=True)
        else:
            # bpftrace prints its maps at the end; they go to the output file.
            tracers.append(Tracer(f"bpftrace {script}", "bpf", [bpftrace, "-o", "{OUT}", path]))
    if "perf" in want:
        perf = shutil.which(args.perf)
        if not perf:
            print("perf not installed: apt-get install linux-perf", flush=True)
        else:
            version = subprocess.run([perf, "--version"], capture_output=True, text=True).stdout.split()
            v = re.sub(r"^(\d+\.\d+).*", r"\1", version[-1]) if version else "?"
            tracers.append(Tracer(f"perf {v} record -g sched", "perf",
                                  [perf, "record", "-a", "-g", "-q", "-e", "sched:sched_switch",
                                   "-e", "sched:sched_waking", "-o", "{OUT}"]))
    return tracers


def make_workloads(args):
    b = args.build
    all_ = {
        "pingpong": [f"{b}/tests/workloads/wl_pingpong", "-n", str(args.ops)],
        "pingpong-nofp": [f"{b}/tests/bench/bench_pingpong_nofp", "-n", str(args.ops)],
        "pipe": [f"{b}/tests/bench/bench_pipe", "-n", str(args.ops)],
        "futex64": [f"{b}/tests/bench/bench_futex", "-n", str(args.ops), "-t", "64"],
    }
    wanted = args.workloads.split(",")
    for w in wanted:
        if w not in all_:
            raise BenchError(f"unknown workload {w} (known: {', '.join(all_)})")
        if not os.access(all_[w][0], os.X_OK):
            raise BenchError(f"{all_[w][0]} not found: build first (make -f Makefile.perf build BUILD={b})")
    return {w: all_[w] for w in wanted}


def run_workload(argv, timeout, tmp):
    """Runs a workload to the end; returns (ops, ns per op) from its own output, and its
    voluntary context switches (its blocks, children included) from wait4."""
    out_path, err_path = os.path.join(tmp, "workload.out"), os.path.join(tmp, "workload.err")
    with open(out_path, "w") as out, open(err_path, "w") as err:
        p = spawn(argv, out, err, tracer=False)
    r = wait_exit(p, timeout)
    if r is None:
        kill_group(p)
        raise BenchError(f"{' '.join(argv)} took more than {timeout} s")
    status, ru = r
    with open(out_path) as f:
        out = f.read()
    m = re.search(r"(?:ops|handoffs|paths)=(\d+).*ns_per_(?:op|handoff|path)=([\d.]+)", out)
    if os.waitstatus_to_exitcode(status) != 0 or not m:
        raise BenchError(f"{' '.join(argv)}: {describe_exit(status)}: {out.strip()} {tail(err_path)}")
    return int(m.group(1)), float(m.group(2)), ru.ru_nvcsw


class RunningTracer:
    """A tracer started and attached: the constructor returns once its programs run (perf:
    once its file has a header), plus a settling time."""

    def __init__(self, tracer, tmp, n, settle):
        self.tracer = tracer
        self.out = os.path.join(tmp, f"{n}.data")
        self.err = os.path.join(tmp, f"{n}.err")
        ensure_bpf_stats()  # attachment is seen by the programs' run counts
        self.vdso_before = set(glob.glob(PERF_VDSO_TEMP)) if tracer.kind == "perf" else set()
        with open(self.err, "w") as err:
            self.p = spawn(tracer.command(self.out), subprocess.DEVNULL, err, tracer=True)
        self.prog_ids = set()
        deadline = time.monotonic() + 60
        while True:
            if self.p.poll() is not None:
                LIVE.pop(self.p.pid, None)
                raise BenchError(f"{tracer.label} exited early with status {self.p.returncode}: {tail(self.err)}")
            if time.monotonic() > deadline:
                self.stop()
                raise BenchError(f"{tracer.label}: not attached after 60 s")
            if tracer.kind == "bpf":
                # Its own programs, attached once they run: each tracer attaches all of its
                # programs in one go, after loading them.
                ids = owned_prog_ids(self.p.pid)
                if ids and bpf_sum(ids)[1] > 0:
                    self.prog_ids = ids
                    break
            elif ((os.path.exists(self.out) and os.path.getsize(self.out) > 0)
                  or os.path.exists(f"{self.out}.tmp.{self.p.pid}")):
                # perf record's header is written; perf offwake --backend tracepoint has
                # created OUT.tmp.PID (written at the end) once its events are open: give it
                # time to read /proc and enable its events.
                settle += 1.0
                break
            time.sleep(0.05)
        time.sleep(settle)

    def stop(self, timeout=60):
        """SIGINT to the tracer itself; returns (seconds to exit, wait status, rusage). A tracer
        still there after 20 s gets a second SIGINT (once, a bpftrace ignored the first one),
        and after timeout s it is killed."""
        t0 = time.monotonic()
        os.kill(self.p.pid, signal.SIGINT)
        r = wait_exit(self.p, min(20, timeout))
        if r is None and timeout > 20:
            log(f"{self.tracer.label}: still running 20 s after SIGINT, sending another")
            os.kill(self.p.pid, signal.SIGINT)
            r = wait_exit(self.p, timeout - 20)
        if r is None:
            kill_group(self.p)
            raise BenchError(f"{self.tracer.label}: still running {timeout} s after SIGINT (killed)")
        status, ru = r
        if status is None:
            raise BenchError(f"{self.tracer.label}: exited before SIGINT: {tail(self.err)}")
        if not exit_ok(status):
            raise BenchError(f"{self.tracer.label}: {describe_exit(status)}: {tail(self.err)}")
        return time.monotonic() - t0, status, ru

    def remove_files(self):
        for f in (self.out, self.out + ".old", self.err):
            if os.path.exists(f):
                os.remove(f)
        if self.tracer.kind == "perf" and self.p.returncode != 0:
            # perf removes its copy of the vDSO at exit, unless it crashed.
            for f in set(glob.glob(PERF_VDSO_TEMP)) - self.vdso_before:
                try:
                    os.remove(f)
                except OSError:
                    pass


# ---------------------------------------------------------------------------------------------
# The overhead rounds.

def one_run(tracer, argv, tmp, n, args):
    """One workload under one tracer: a dict of per-op figures. A tracer that fails to start
    raises; one that fails to exit cleanly after the workload has its figures kept, with the
    failure in "stop_error"."""
    others = set(other_tracers())
    if tracer.kind == "none":
        ops, wall, switches = run_workload(argv, args.timeout, tmp)
        res = {"wall": wall, "bpf": None, "runs": None, "cpu": None}
    else:
        rt = RunningTracer(tracer, tmp, n, args.settle)
        stop_error = None
        try:
            ensure_bpf_stats()
            b0, c0 = bpf_sum(rt.prog_ids), cpu_ns(rt.p.pid)
            ops, wall, switches = run_workload(argv, args.timeout, tmp)
            b1, c1 = bpf_sum(rt.prog_ids), cpu_ns(rt.p.pid)
            try:
                rt.stop()
            except BenchError as e:
                stop_error = str(e)
        finally:
            if rt.p.pid in LIVE:
                try:
                    rt.stop(30)
                except BenchError:
                    pass
            rt.remove_files()
        res = {"wall": wall, "cpu": (c1 - c0) / ops, "stop_error": stop_error,
               "bpf": (b1[0] - b0[0]) / ops if tracer.kind == "bpf" else None,
               "runs": (b1[1] - b0[1]) / ops if tracer.kind == "bpf" else None}
    res["blocks"] = switches / ops
    res["others"] = sorted(others | set(other_tracers()))
    return res


def overhead_rounds(args, workloads, tracers, tmp):
    results = {(w, t.label): [] for w in workloads for t in tracers}
    n = 0
    for r in range(args.rounds):
        for wi, (w, argv) in enumerate(workloads.items()):
            k = (r + wi) % len(tracers)  # a different tracer follows the untraced run each time
            for t in tracers[k:] + tracers[:k]:
                if t.failure:
                    continue
                n += 1
                try:
                    res = one_run(t, argv, tmp, n, args)
                except BenchError as e:
                    t.failure = str(e)
                    log(f"FAILED {t.label}: {e} (skipped from now on)")
                    continue
                res["round"] = r
                results[(w, t.label)].append(res)
                log(f"round {r + 1}/{args.rounds} {w:<8} {t.label:<34} wall {fmt(res['wall']):>8} ns/op"
                    f" ({res['blocks']:.2f} blocks/op)"
                    f"  BPF {fmt(res['bpf']):>7} ns/op ({fmt(res['runs'], 2)} runs/op)"
                    f"  recorder CPU {fmt(res['cpu']):>7} ns/op"
                    + (f"  [others running: {' '.join(res['others'])}]" if res["others"] else ""))
                if res.get("stop_error"):
                    log(f"  {res['stop_error']} (figures kept: the workload had ended)")
    return results


def median_of(rows, key):
    vals = [x[key] for x in rows if x[key] is not None]
    return statistics.median(vals) if vals else None


def print_overhead_table(args, workloads, tracers, results):
    print()
    print(f"Overhead, system-wide tracers, one sitting: {args.rounds} rounds, tracers alternated within each "
          f"round, medians; {args.ops:,} ops per run.")
    print("One op = one block + one wakeup: a handoff (pingpong), a one-way pipe transfer (pipe), a turn "
          "(futex64, 64 threads). Issue 8's \"per handoff\" is \"per op\" here.")
    print("ratio = median wall / median untraced wall; range = min-max of each round's wall / that round's "
          "untraced wall.")
    print("blocks = the workload's voluntary context switches (wait4). BPF = sum of run_time_ns over the tracer's "
          "programs (kernel.bpf_stats_enabled=1); runs = program runs. recorder CPU = user+system time of the "
          "tracer process. All per op, during the workload. BPF ns/op is \"-\" for tracers without BPF (perf, "
          "offwake --backend tracepoint): their cost is the wall ratio and the recorder CPU.")
    head = ["workload", "tracer", "wall ns/op", "ratio", "range", "blocks/op", "BPF ns/op", "runs/op",
            "recorder CPU ns/op"]
    rows = []
    for w in workloads:
        base_rows = results[(w, "none")]
        base = median_of(base_rows, "wall")
        base_by_round = {x["round"]: x["wall"] for x in base_rows}
        for t in tracers:
            rs = results[(w, t.label)]
            if not rs:
                rows.append([w, t.label, "failed" if t.failure else "-", "", "", "", "", "", ""])
                continue
            wall = median_of(rs, "wall")
            paired = [x["wall"] / base_by_round[x["round"]] for x in rs if x["round"] in base_by_round]
            rows.append([w, t.label, fmt(wall), f"{wall / base:.2f}" if base else "-",
                         f"{min(paired):.2f}-{max(paired):.2f}" if paired and t.kind != "none" else "",
                         fmt(median_of(rs, "blocks"), 2), fmt(median_of(rs, "bpf")), fmt(median_of(rs, "runs"), 2), fmt(median_of(rs, "cpu"))])
    print_table(head, rows, left=2)
    # Issue 23: the unwind tables' walk (the default, auto) against frame pointers alone, which
    # on code built without them gives one or two frames: BPF ns/op of the one over the other.
    auto = next((t for t in tracers if t.argv[-1:] == ["{OUT}"] and t.label.endswith("offwake")), None)
    fp = next((t for t in tracers if t.label.endswith("--user-walker fp")), None)
    for w in workloads:
        if auto and fp and results[(w, auto.label)] and results[(w, fp.label)]:
            a, f = median_of(results[(w, auto.label)], "bpf"), median_of(results[(w, fp.label)], "bpf")
            if a is not None and f:
                print(f"{w}: BPF ns/op of --user-walker=auto over fp: {a / f:.2f} ({fmt(a)} / {fmt(f)})")
    for t in tracers:
        if t.failure:
            print(f"failed: {t.label}: {t.failure}")
        bad = [x["stop_error"] for w in workloads for x in results[(w, t.label)] if x.get("stop_error")]
        if bad:
            total = sum(len(results[(w, t.label)]) for w in workloads)
            print(f"note: {t.label}: {len(bad)} of {total} runs ended badly after the workload (figures kept): "
                  f"{bad[0].splitlines()[0]}")
    disturbed = sum(1 for rs in results.values() for x in rs if x["others"])
    if disturbed:
        names = sorted({re.sub(r"\[\d+\]", "", o) for rs in results.values() for x in rs for o in x["others"]})
        print(f"note: {disturbed} of {sum(len(rs) for rs in results.values())} runs had other perf, perf-offwake "
              f"or bpftrace processes running ({', '.join(names)}): wall figures of those runs are disturbed")


def print_table(head, rows, left):
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    line = lambda r: "  ".join(str(c).ljust(widths[i]) if i < left else str(c).rjust(widths[i])
                               for i, c in enumerate(r))
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


# ---------------------------------------------------------------------------------------------
# Stop time with many keys.

SUMMARY_KEYS = re.compile(r"([\d,]+) distinct (?:stacks|keys)")
SUMMARY_MB = re.compile(r"Captured and wrote ([\d.]+) MB")


READABLE_WAIT_S = 120  # perf sorts and resolves the whole file before its first line


def verify_readable(args, path):
    """perf script reads the file: its first sample is an offwake-time sample."""
    perf = shutil.which(args.perf)
    if not perf:
        return "not checked (no perf)"
    p = spawn([perf, "script", "-i", path], subprocess.PIPE, subprocess.DEVNULL, tracer=False)
    first = ""
    try:
        deadline = time.monotonic() + READABLE_WAIT_S
        while time.monotonic() < deadline:
            # perf sorts the whole file before its first line: wait for it, up to the deadline.
            if not select.select([p.stdout], [], [], 1)[0]:
                continue
            line = p.stdout.readline()
            if not line or b"offwake-time" in line:
                first = line.decode(errors="replace").strip()
                break
    finally:
        kill_group(p)
        p.stdout.close()
    return f"yes: {first}" if first else f"NO: perf script printed no offwake-time sample within {READABLE_WAIT_S} s"


def keys_rounds(args, offwakes, tmp):
    argv = [f"{args.build}/tests/bench/bench_keys", "-d", str(args.keys_depth), "-t", "2"]
    if not os.access(argv[0], os.X_OK):
        raise BenchError(f"{argv[0]} not found: build first")
    results = {label: [] for label, _ in offwakes}
    failed = {}
    n = 0
    for r in range(args.keys_rounds):
        order = offwakes if r % 2 == 0 else offwakes[::-1]
        for prefix, binary in order:
            if prefix in failed:
                continue
            n += 1
            t = Tracer(prefix + "offwake", "bpf",
                       [binary, "record", "-a", "-o", "{OUT}", "--map-size", str(args.keys_map_size),
                        "--stack-storage-size", str(args.keys_stack_storage)], binary)
            try:
                rt = RunningTracer(t, tmp, f"keys{n}", args.settle)
                try:
                    _, wall, _ = run_workload(argv, args.timeout, tmp)
                    hwm = read_vm(rt.p.pid, "VmHWM")
                    stop_s, _, ru = rt.stop(300)
                    summary = tail(rt.err, 5)
                    keys = SUMMARY_KEYS.search(summary)
                    mb = SUMMARY_MB.search(summary)
                    res = {"stop": stop_s, "hwm": hwm, "maxrss": ru.ru_maxrss * 1024, "wall": wall,
                           "keys": int(keys.group(1).replace(",", "")) if keys else None,
                           "mb": float(mb.group(1)) if mb else None}
                    if r == 0:
                        res["readable"] = verify_readable(args, rt.out)
                        log(f"{t.label}: perf script reads the file: {res['readable']}")
                finally:
                    if rt.p.pid in LIVE:
                        cleanup_children()
                    rt.remove_files()
            except BenchError as e:
                failed[prefix] = str(e)
                log(f"FAILED keys {t.label}: {e}")
                continue
            results[prefix].append(res)
            log(f"keys round {r + 1}/{args.keys_rounds} {t.label:<16} {fmt(res['keys'])} keys: SIGINT to exit "
                f"{res['stop']:.3f} s, VmHWM {fmt(mb_(res['hwm']), 1)} MiB, ru_maxrss {fmt(mb_(res['maxrss']), 1)} "
                f"MiB, file {fmt(res['mb'], 1)} MB, workload {fmt(wall)} ns/path")
    return results, failed


def mb_(v):
    return None if v is None else v / 1048576


def print_keys_table(args, offwakes, results, failed):
    print()
    print(f"Stop time with many keys: bench_keys walks {2 ** args.keys_depth:,} distinct user call paths in 2 threads "
          f"and blocks once at the end of each, recorded with -a --map-size {args.keys_map_size} "
          f"--stack-storage-size {args.keys_stack_storage}; {args.keys_rounds} rounds, medians.")
    print("keys = \"distinct stacks\" in the recorder's summary; stop = SIGINT to the recorder's exit (status 0, "
          "file complete); VmHWM = peak RSS just before SIGINT; max RSS = ru_maxrss at exit (includes writing).")
    head = ["recorder", "keys", "stop s", "range s", "VmHWM MiB", "max RSS MiB", "file MB"]
    rows = []
    for prefix, _ in offwakes:
        rs = results[prefix]
        if not rs:
            rows.append([prefix + "offwake", "failed" if prefix in failed else "-", "", "", "", "", ""])
            continue
        stops = [x["stop"] for x in rs]
        rows.append([prefix + "offwake", fmt(median_of(rs, "keys")), f"{statistics.median(stops):.3f}",
                     f"{min(stops):.3f}-{max(stops):.3f}", fmt(mb_(median_of(rs, "hwm")), 1),
                     fmt(mb_(median_of(rs, "maxrss")), 1), fmt(median_of(rs, "mb"), 1)])
    print_table(head, rows, left=1)
    for prefix, msg in failed.items():
        print(f"failed: {prefix}offwake: {msg}")


# ---------------------------------------------------------------------------------------------

def startup_rounds(args, offwakes, tmp):
    """Issue 23: a system-wide recording's start-up with unwind tables. Each perf-offwake records
    the whole machine for half a second; its summary states the tables built for every process
    alive (binaries, memory) and the milliseconds that took before the programs attached; the
    wall time to a complete file is measured too."""
    rows = []
    for prefix, binary in offwakes:
        if prefix:  # baselines may predate the tables
            continue
        for r in range(args.startup_rounds):
            out = os.path.join(tmp, f"startup-{r}.data")
            t0 = time.monotonic()
            p = subprocess.run([binary, "record", "-a", "--duration", "0.5", "-o", out], capture_output=True, text=True)
            wall = time.monotonic() - t0
            m = re.search(r"unwind tables: (\d+) binaries, ([\d.]+) of (\d+) MB \(--unwind-memory\), (\d+) ms at the start",
                          p.stderr)
            if p.returncode != 0 or not m:
                raise BenchError(f"{binary} record -a: no unwind table summary (status {p.returncode}): {p.stderr[-500:]}")
            procs = sum(1 for d in os.listdir("/proc") if d.isdigit())
            rows.append([prefix + "offwake", str(r + 1), str(procs), m.group(1), f"{m.group(2)} / {m.group(3)}",
                         m.group(4), f"{wall:.2f}"])
            os.unlink(out)
    print()
    print("Start-up of a system-wide recording (record -a --duration 0.5): the unwind tables of every process alive "
          "are built before the BPF programs attach.")
    print_table(["tracer", "round", "processes", "tables", "table MB / --unwind-memory", "tables ms", "wall s"],
                rows, left=2)


def parse_args():
    ap = argparse.ArgumentParser(
        description="Overhead of system-wide off-CPU recording (perf offwake and peers), as a table.",
        epilog="Example: scripts/bench-overhead.sh build/dev --baseline before=/path/to/old/perf-offwake")
    ap.add_argument("build", help="build directory (holds perf-plugin/perf-offwake and the workloads)")
    ap.add_argument("legacy", nargs="*", type=int, help=argparse.SUPPRESS)  # old usage: ROUNDS [OPS]
    ap.add_argument("-r", "--rounds", type=int, default=5, help="rounds of every workload x tracer (default 5)")
    ap.add_argument("-n", "--ops", type=int, default=50000, help="ops per workload run (default 50000)")
    ap.add_argument("--baseline", action="append", default=[], metavar="[LABEL=]PATH",
                    help="another perf-offwake binary, e.g. the code before a change: adds its offwake rows, "
                         "labelled 'LABEL:' (default 'before:'); repeatable")
    ap.add_argument("--offwake", help="perf-offwake to measure (default BUILD/perf-plugin/perf-offwake)")
    ap.add_argument("--workloads", default="pingpong,pipe,futex64", help="subset (default: all three)")
    ap.add_argument("--tracers", default=",".join(TRACER_KEYS),
                    help=f"subset of {','.join(TRACER_KEYS)} (untraced runs are always in)")
    ap.add_argument("--keys-rounds", type=int, default=3, help="rounds of the stop-time test (0: skip; default 3)")
    ap.add_argument("--startup-rounds", type=int, default=3,
                    help="system-wide start-up measurements with unwind tables (0: skip; default 3)")
    ap.add_argument("--keys-depth", type=int, default=17, help="2^DEPTH call paths for the stop-time test (17)")
    ap.add_argument("--keys-map-size", type=int, default=262144)
    ap.add_argument("--keys-stack-storage", type=int, default=524288)
    ap.add_argument("--settle", type=float, default=0.5, help="seconds between attach and workload (0.5)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds a workload may take (600)")
    ap.add_argument("--bt-dir", default=os.path.normpath(os.path.join(TOP, "..", "shared", "bench")),
                    help="where offwake4.bt and floor.bt are (default ../shared/bench from the repository)")
    ap.add_argument("--bpftrace", default="bpftrace")
    ap.add_argument("--perf", default="perf", help="Debian's perf (default: perf on PATH)")
    args = ap.parse_args()
    if args.legacy:
        args.rounds = args.legacy[0]
        if len(args.legacy) > 1:
            args.ops = args.legacy[1]
    args.build = os.path.abspath(args.build)
    args.offwake = os.path.abspath(args.offwake or f"{args.build}/perf-plugin/perf-offwake")
    if args.rounds < 1 or args.ops < 2:
        ap.error("--rounds must be at least 1 and --ops at least 2")
    return args


def offwake_binaries(args):
    found = [("", args.offwake)]
    for i, b in enumerate(args.baseline):
        label, path = b.split("=", 1) if "=" in b else ("before" if i == 0 else f"before{i + 1}", b)
        found.append((label + ": ", os.path.abspath(path)))
    for label, path in found:
        if not os.access(path, os.X_OK):
            raise BenchError(f"{path} not found or not executable")
    if len({p for _, p in found}) != len(found):
        log("note: a --baseline is the same binary as the one measured")
    return found


def on_signal(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def main():
    args = parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-overhead: run as root (system-wide BPF and perf)")
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    old_stats = None
    tmp = None
    status = 0
    try:
        offwakes = offwake_binaries(args)
        workloads = make_workloads(args)
        tracers = make_tracers(args, offwakes)
        if not os.path.exists("/sys/kernel/tracing/events"):
            log("mounting tracefs on /sys/kernel/tracing")
            subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
        with open(STATS_SYSCTL) as f:
            old_stats = f.read().strip()
        with open(STATS_SYSCTL, "w") as f:
            f.write("1")
        tmp = tempfile.mkdtemp(prefix="bench-overhead-")
        others = other_tracers()
        if others:
            log(f"warning: other perf, perf-offwake or bpftrace processes are running and will add to every "
                f"row: {' '.join(others)}")
        runs = args.rounds * len(workloads) * len(tracers)
        log(f"{len(workloads)} workloads x {len(tracers)} tracers x {args.rounds} rounds = {runs} runs, "
            f"{args.ops:,} ops each; then {args.keys_rounds} stop-time rounds per perf-offwake")
        results = overhead_rounds(args, workloads, tracers, tmp)
        keys = keys_rounds(args, offwakes, tmp) if args.keys_rounds > 0 else None
        others = other_tracers()
        if others:
            log(f"warning: other perf, perf-offwake or bpftrace processes were running at the end: "
                f"{' '.join(others)}")
        print_overhead_table(args, workloads, tracers, results)
        if args.startup_rounds > 0:
            startup_rounds(args, offwakes, tmp)
        if keys:
            print_keys_table(args, offwakes, *keys)
            status = 1 if keys[1] else 0
        print(f"\n{time.strftime('%Y-%m-%d %H:%M')}, {os.uname().release}, {os.cpu_count()} CPUs, "
              f"took {time.monotonic() - START:.0f} s")
        if any(t.failure for t in tracers):
            status = 1
    except Interrupted as e:
        print(f"\nbench-overhead: interrupted ({e}), cleaning up", file=sys.stderr)
        status = 130
    except (BenchError, subprocess.CalledProcessError, OSError) as e:
        print(f"bench-overhead: {e}", file=sys.stderr)
        status = 1
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
        cleanup_children()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        if old_stats is not None:
            with open(STATS_SYSCTL, "w") as f:
                f.write(old_stats)
    sys.exit(status)


if __name__ == "__main__":
    main()
