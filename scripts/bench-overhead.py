#!/usr/bin/env python3
"""Overhead of system-wide off-CPU recording: perf offwake against its peers (issue 8).

Three workloads in which every op is one block and one wakeup (a pthread_cond ping-pong, a
pipe ping-pong between two processes, 64 threads taking turns on one futex) run under each
tracer in turn. Every tracer records the whole system; it is started before the workload
and stopped (SIGINT to its pid) after it. Rounds alternate the tracers, so that all figures
come from one sitting, and the table shows medians over the rounds:

  wall ns/op          the workload's own timing, and its ratio to the untraced median
  BPF ns/op           run_time_ns summed over the tracer's BPF programs (bpftool prog show,
                      kernel.bpf_stats_enabled=1), read right before and after the workload,
                      and perf offwake's task work callbacks, which time themselves
  recorder CPU ns/op  user + system CPU time of the tracer process during the workload

Tracers without BPF (perf record, and perf offwake --backend tracepoint, which reads the same
tracepoints through perf's ring buffers) have no BPF ns/op ("-"): their cost is all in the
wall ratio and the recorder CPU.

A real database (issue 24), workload "pgbench": the script makes its own PostgreSQL cluster
from Debian's packages (scripts/bench_postgres.py: initdb in a temporary directory, a unix
socket there and no TCP, pgbench -i -s 8), then every run is pgbench -n -c 8 -j 2 -T 8 under
one tracer (the defaults; --pgbench-*, --pg-bin, --pg-port). The cluster is stopped and its directory removed at the end, on an error or
Ctrl-C too; the package's own "main" cluster is not touched. Its table, per transaction:

  BPF us/txn          run_time_ns summed over the tracer's programs, read right before and
                      after pgbench, over the transactions pgbench reports; for perf offwake,
                      plus its task work callbacks' own timing (counted in no program's
                      run_time_ns), the row "task work (user_work_run)"
  TPS traced/untraced pgbench's TPS over the untraced run's of the same round; median of rounds
  switches/txn        context switches of the whole machine (/proc/stat ctxt) per transaction
and per BPF program: us per run (run_time_ns / run_cnt) and runs per transaction.

Then, since pgbench's TPS drifts between runs by more than a tracer costs, each tracer's TPS
again within one pgbench run (scripts/bench_windows.py): untraced for a window, then
--pgbench-windows times (6) attached for a window and detached for one, of
--pgbench-window-seconds (6) each, with pgbench reporting its TPS every second. Each traced
window's TPS over the mean of the untraced windows on either side, median of windows with a
95% confidence interval for that median (the sign test's; with 6 windows it is min-max, with
10 the second smallest to the second largest). The kernel's BPF statistics are off in the
traced windows (--window-stats off, the default): they cost every BPF program two clock reads
and a counter update a run, which a production host does not pay and the TPS must not either
(they cost perf offwake's programs a few hundred ns a handoff of wl_pingpong, more than
bpftrace's; README, "Overhead benchmark"). --window-stats on keeps them on and adds the BPF
us/txn within the traced windows; --window-stats alternate turns them off and on in turn, and
gives a row for each: what the statistics cost a tracer's TPS. 0 windows skips this.

Tracers (--tracers; all by default): perf offwake with no filter and with several options,
bpftrace with the same four stacks, perf 6.12 record --off-cpu -e dummy (one user stack, no
waker, no on-CPU samples; built by scripts/build-perf612.sh), Debian perf recording the
scheduler tracepoints, and a control: Debian perf recording a dummy event, started and stopped
like the others at next to no cost, which shows what the comparison gives with no cost behind
it (ideally 1.00). --offwake-mode LABEL='ARGS' adds perf offwake with any options.

Then, for perf offwake (and each --baseline), the time from SIGINT to a complete file holding
~100,000 aggregated keys, and the recorder's peak RSS.

  usage: scripts/bench-overhead.py BUILD_DIR [options]      (as root; see --help)
  e.g.   scripts/bench-overhead.py build/cmake --workloads pgbench --tracers offwake,bpftrace4,offcpu \
             --offwake-mode min1000='--min-block 1000' --keys-rounds 0 --startup-rounds 0
"""

import argparse
import glob
import json
import os
import re
import select
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from bench_postgres import PgCluster, PgError, client_env, find_bin_dir, parse_pgbench
from bench_windows import cycle_ratios, median_interval, parse_progress, summary

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


def spawn(argv, stdout, stderr, tracer, text=False, env=None):
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, text=text,
                         start_new_session=True, env=env)
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
    """id -> (run_time_ns, run_cnt, name) of every loaded BPF program (bpftool gives the full
    name from BTF where the kernel's is cut at 15 characters)."""
    out = subprocess.run(["bpftool", "prog", "show", "-j"], check=True, capture_output=True, text=True).stdout
    return {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0), p.get("name") or f"id{p['id']}")
            for p in json.loads(out or "[]")}


def fdinfo_ids(pid, field):
    """The ids that process pid's fds name in their fdinfo lines "FIELD:" (prog_id, map_id)."""
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
                    if line.startswith(field + ":"):
                        ids.add(int(line.split()[1]))
        except (OSError, ValueError):
            pass
    return ids


def owned_prog_ids(pid):
    """Ids of the BPF programs that a process holds: program and link fds name them in fdinfo,
    and bpftool perf names those attached through perf event fds. (This bpftool has no "pids"
    field, and a diff of the ids before and after the start would also catch programs that
    others load meanwhile, such as a test suite running on the same machine.)"""
    ids = fdinfo_ids(pid, "prog_id")
    out = subprocess.run(["bpftool", "perf", "-j"], capture_output=True, text=True).stdout
    try:
        ids.update(a["prog_id"] for a in json.loads(out or "[]") if a.get("pid") == pid)
    except (ValueError, KeyError, TypeError):
        pass
    return ids


def bpf_by_name(ids):
    """name -> [run_time_ns, run_cnt] of the programs ids (summed over programs of one name)."""
    progs = bpf_progs()
    named = {}
    for i in ids:
        if i in progs:
            t, c, name = progs[i]
            acc = named.setdefault(name, [0, 0])
            acc[0] += t
            acc[1] += c
    return named


# perf offwake's task work callbacks (bpf-progs/deferred_user.bpf.h) walk deferred user stacks
# outside any program's run_time_ns: they time themselves into the recorder's counters map.
TASK_WORK = "task work (user_work_run)"


def task_work_time(pid):
    """(ns, runs) of perf offwake's task work callbacks so far, summed over CPUs, from the
    counters map of recorder pid (bpftool's BTF-formatted dump); None for other tracers."""
    maps = subprocess.run(["bpftool", "map", "show", "-j"], capture_output=True, text=True).stdout
    try:
        ids = fdinfo_ids(pid, "map_id")
        counters = [m["id"] for m in json.loads(maps or "[]") if m.get("name") == "counters" and m["id"] in ids]
    except (ValueError, KeyError, TypeError):
        return None
    if len(counters) != 1:
        return None
    out = subprocess.run(["bpftool", "map", "dump", "id", str(counters[0]), "-j"], capture_output=True,
                         text=True).stdout
    try:
        values = json.loads(out or "[]")[0]["formatted"]["values"]
        return (sum(v["value"].get("user_work_ns", 0) for v in values),
                sum(v["value"].get("user_work_runs", 0) for v in values))
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def bpf_sum(ids):
    named = bpf_by_name(ids)
    return sum(t for t, _ in named.values()), sum(c for _, c in named.values())


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
    set_bpf_stats("1")


def set_bpf_stats(value):
    with open(STATS_SYSCTL, "w") as f:
        f.write(value)


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
               "offcpu", "perf", "control"]
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
    for label, extra in args.offwake_modes:  # the binary measured only: baselines may lack the options
        tracers.append(Tracer(f"offwake {label} ({shlex.join(extra)})", "bpf",
                              [args.offwake, "record", "-a", "-q", "-o", "{OUT}"] + extra, args.offwake))
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
    if "offcpu" in want:
        tracers += perf_off_cpu_tracer(args.perf612)
    if want & {"perf", "control"}:
        perf = shutil.which(args.perf)
        if not perf:
            print("perf not installed: apt-get install linux-perf", flush=True)
        else:
            version = subprocess.run([perf, "--version"], capture_output=True, text=True).stdout.split()
            v = re.sub(r"^(\d+\.\d+).*", r"\1", version[-1]) if version else "?"
            if "perf" in want:
                tracers.append(Tracer(f"perf {v} record -g sched", "perf",
                                      [perf, "record", "-a", "-g", "-q", "-e", "sched:sched_switch",
                                       "-e", "sched:sched_waking", "-o", "{OUT}"]))
            if "control" in want:
                # Started and stopped like a tracer, but recording nothing of note: what the
                # comparison itself gives, with no cost behind it (ideally 1.00).
                tracers.append(Tracer(f"control: perf {v} record -e dummy", "perf",
                                      [perf, "record", "-a", "-q", "-e", "dummy", "-o", "{OUT}"]))
    return tracers


def perf_off_cpu_tracer(perf):
    """perf's own off-CPU profiler (perf 6.12 built with BPF skeletons; Debian's 6.1 has none):
    one user stack per block, no waker. -e dummy: no on-CPU samples, so that only its off-CPU
    part is measured."""
    if not os.access(perf, os.X_OK):
        print(f"perf 6.12 not found at {perf} (--perf612; make -f Makefile.perf bench-deps builds it): "
              "--off-cpu skipped", flush=True)
        return []
    version = subprocess.run([perf, "version"], capture_output=True, text=True).stdout.split()
    v = re.sub(r"^(\d+\.\d+).*", r"\1", version[-1]) if version else "?"
    return [Tracer(f"perf {v} --off-cpu", "bpf",
                   [perf, "record", "-a", "-q", "--off-cpu", "-e", "dummy", "-o", "{OUT}"])]


PGBENCH = "pgbench"
WORKLOADS = ["pingpong", "pingpong-nofp", "pipe", "futex64", PGBENCH]


def make_workloads(args):
    """name -> workload; nothing is started yet (the PostgreSQL cluster starts in main)."""
    b = args.build
    programs = {
        "pingpong": [f"{b}/tests/workloads/wl_pingpong", "-n", str(args.ops)],
        "pingpong-nofp": [f"{b}/tests/bench/bench_pingpong_nofp", "-n", str(args.ops)],
        "pipe": [f"{b}/tests/bench/bench_pipe", "-n", str(args.ops)],
        "futex64": [f"{b}/tests/bench/bench_futex", "-n", str(args.ops), "-t", "64"],
    }
    wanted = args.workloads.split(",")
    found = {}
    for w in wanted:
        if w == PGBENCH:
            found[w] = PgbenchWorkload(PgCluster(find_bin_dir(args.pg_bin), args.pg_port, log))
        elif w in programs:
            if not os.access(programs[w][0], os.X_OK):
                raise BenchError(f"{programs[w][0]} not found: build first (make -f Makefile.perf build BUILD={b})")
            found[w] = ProgramWorkload(programs[w])
        else:
            raise BenchError(f"unknown workload {w} (known: {', '.join(WORKLOADS)})")
    return found


class ProgramWorkload:
    """One of our workload programs, which times its own ops."""

    def __init__(self, argv):
        self.argv = argv

    def run(self, args, tmp):
        ops, wall, switches = run_workload(self.argv, args.timeout, tmp)
        return {"ops": ops, "wall": wall, "switches": switches}


class PgbenchWorkload:
    """pgbench against the benchmark's own PostgreSQL cluster. An op is a transaction; wall
    ns/op is 1e9 / TPS; the context switches are the whole machine's (/proc/stat ctxt), since
    the server's backends, not pgbench's children, do most of the blocking."""

    def __init__(self, cluster):
        self.cluster = cluster

    def run(self, args, tmp):
        argv = self.cluster.pgbench_argv(args.pgbench_seconds, args.pgbench_clients, args.pgbench_threads)
        out_path, err_path = os.path.join(tmp, "pgbench.out"), os.path.join(tmp, "pgbench.err")
        c0 = system_switches()
        with open(out_path, "w") as out, open(err_path, "w") as err:
            p = spawn(argv, out, err, tracer=False, env=client_env())
        r = wait_exit(p, args.pgbench_seconds + 120)
        c1 = system_switches()
        if r is None:
            kill_group(p)
            raise BenchError(f"pgbench took more than {args.pgbench_seconds + 120} s")
        with open(out_path) as f:
            parsed = parse_pgbench(f.read())
        if os.waitstatus_to_exitcode(r[0]) != 0 or not parsed:
            raise BenchError(f"pgbench: {describe_exit(r[0])}: {tail(out_path, 3)} {tail(err_path, 3)} "
                             f"(server log: {self.cluster.server_log()})")
        txns, tps = parsed
        return {"ops": txns, "wall": 1e9 / tps, "switches": c1 - c0, "tps": tps}


def system_switches():
    """Context switches of the whole machine since boot (/proc/stat ctxt)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    raise BenchError("/proc/stat has no ctxt line")


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

    def close(self):
        """After stop(), or instead of it on an error: a tracer still running is stopped (its
        failure ignored), and its files go."""
        if self.p.pid in LIVE:
            try:
                self.stop(30)
            except BenchError:
                pass
        self.remove_files()

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

def one_run(tracer, workload, tmp, n, args):
    """One workload under one tracer: a dict of per-op figures. A tracer that fails to start
    raises; one that fails to exit cleanly after the workload has its figures kept, with the
    failure in "stop_error"."""
    others = set(other_tracers())
    if tracer.kind == "none":
        w = workload.run(args, tmp)
        res = {"bpf": None, "runs": None, "cpu": None, "progs": {}}
    else:
        rt = RunningTracer(tracer, tmp, n, args.settle)
        stop_error = None
        try:
            ensure_bpf_stats()
            b0, c0 = bpf_by_name(rt.prog_ids), cpu_ns(rt.p.pid)
            tw0 = task_work_time(rt.p.pid) if tracer.kind == "bpf" else None
            w = workload.run(args, tmp)
            b1, c1 = bpf_by_name(rt.prog_ids), cpu_ns(rt.p.pid)
            tw1 = task_work_time(rt.p.pid) if tw0 is not None else None
            if tw0 is not None and tw1 is not None:
                b0[TASK_WORK], b1[TASK_WORK] = list(tw0), list(tw1)
            try:
                rt.stop(args.stop_timeout)
            except BenchError as e:
                stop_error = str(e)
        finally:
            rt.close()
        # Per program, during the workload: (run_time_ns, run_cnt).
        progs = {name: (b1[name][0] - t, b1[name][1] - c) for name, (t, c) in b0.items() if name in b1}
        bpf = tracer.kind == "bpf"
        res = {"cpu": (c1 - c0) / w["ops"], "stop_error": stop_error, "progs": progs if bpf else {},
               "bpf": sum(t for t, _ in progs.values()) / w["ops"] if bpf else None,
               "runs": sum(c for _, c in progs.values()) / w["ops"] if bpf else None}
    res.update(wall=w["wall"], ops=w["ops"], tps=w.get("tps"), blocks=w["switches"] / w["ops"])
    res["others"] = sorted(others | set(other_tracers()))
    return res


def log_run(args, r, w, t, res):
    if res["tps"] is not None:
        figures = (f"TPS {res['tps']:>8,.0f} ({res['ops']:,} transactions, {res['blocks']:.1f} switches/txn)"
                   f"  BPF {fmt(us(res['bpf']), 1):>6} us/txn ({fmt(res['runs'], 1)} runs/txn)"
                   f"  recorder CPU {fmt(us(res['cpu']), 1):>6} us/txn")
    else:
        figures = (f"wall {fmt(res['wall']):>8} ns/op ({res['blocks']:.2f} blocks/op)"
                   f"  BPF {fmt(res['bpf']):>7} ns/op ({fmt(res['runs'], 2)} runs/op)"
                   f"  recorder CPU {fmt(res['cpu']):>7} ns/op")
    log(f"round {r + 1}/{args.rounds} {w:<8} {t.label:<34} {figures}"
        + (f"  [others running: {' '.join(res['others'])}]" if res["others"] else ""))


def us(ns):
    return None if ns is None else ns / 1000


def overhead_rounds(args, workloads, tracers, tmp):
    results = {(w, t.label): [] for w in workloads for t in tracers}
    n = 0
    for r in range(args.rounds):
        for wi, (w, workload) in enumerate(workloads.items()):
            k = (r + wi) % len(tracers)  # a different tracer follows the untraced run each time
            for t in tracers[k:] + tracers[:k]:
                if t.failure:
                    continue
                n += 1
                try:
                    res = one_run(t, workload, tmp, n, args)
                except BenchError as e:
                    t.failure = str(e)
                    log(f"FAILED {t.label}: {e} (skipped from now on)")
                    continue
                res["round"] = r
                results[(w, t.label)].append(res)
                log_run(args, r, w, t, res)
                if res.get("stop_error"):
                    log(f"  {res['stop_error']} (figures kept: the workload had ended)")
    return results


def median_of(rows, key):
    vals = [x[key] for x in rows if x[key] is not None]
    return statistics.median(vals) if vals else None


def print_overhead_table(args, workloads, tracers, results):
    programs = [w for w in workloads if w != PGBENCH]
    if programs:
        print_programs_table(args, programs, tracers, results)
    if PGBENCH in workloads:
        print_pgbench_table(args, workloads[PGBENCH], tracers, results)
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


def print_programs_table(args, workloads, tracers, results):
    """The workloads of ours, whose ops are each one block and one wakeup."""
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


def print_pgbench_table(args, workload, tracers, results):
    """Issue 24's table: per transaction of a real database, and per BPF program run."""
    print()
    print(f"PostgreSQL {workload.cluster.version} under pgbench -n -c {args.pgbench_clients} -j {args.pgbench_threads} "
          f"-T {args.pgbench_seconds} (scale {args.pgbench_scale}, unix socket), system-wide tracers, one sitting: "
          f"{args.rounds} rounds, tracers alternated within each round, medians.")
    print("BPF us/txn = sum of run_time_ns over the tracer's programs (kernel.bpf_stats_enabled=1), read right "
          "before and after pgbench, over the transactions pgbench reports; runs/txn = their runs.")
    print("TPS traced/untraced = pgbench's TPS over the untraced run's TPS of the same round, median of rounds "
          "(range = min-max). switches/txn = context switches of the whole machine (/proc/stat ctxt). "
          "recorder CPU = user+system time of the tracer process.")
    base_by_round = {x["round"]: x["tps"] for x in results[(PGBENCH, "none")]}
    rows = []
    for t in tracers:
        rs = results[(PGBENCH, t.label)]
        if not rs:
            rows.append([tracer_name(t), "failed" if t.failure else "-", "", "", "", "", "", ""])
            continue
        ratios = [x["tps"] / base_by_round[x["round"]] for x in rs if x["round"] in base_by_round]
        rows.append([tracer_name(t), fmt(us(median_of(rs, "bpf")), 1),
                     f"{statistics.median(ratios):.2f}" if ratios and t.kind != "none" else "",
                     f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios and t.kind != "none" else "",
                     fmt(median_of(rs, "tps")), fmt(median_of(rs, "blocks"), 1), fmt(median_of(rs, "runs"), 1),
                     fmt(us(median_of(rs, "cpu")), 1)])
    print_table(["tracer", "BPF us/txn", "TPS traced/untraced", "range", "TPS", "switches/txn", "runs/txn",
                 "recorder CPU us/txn"], rows, left=1)
    print()
    print("Per BPF program during pgbench: us/run = run_time_ns / run_cnt, runs/txn = run_cnt / transactions, "
          "us/txn = run_time_ns / transactions (medians of rounds; programs that ran).")
    print_table(["tracer", "program", "us/run", "runs/txn", "us/txn"], program_rows(tracers, results), left=2)


# ---------------------------------------------------------------------------------------------
# pgbench's TPS in windows of one run (bench_windows.py says why).

def window_runs(args, cluster, tracers, tmp):
    """For each tracer, one pgbench run with a progress report a second: untraced for a window,
    then args.pgbench_windows times the tracer attached for a window and detached for one.
    Returns label -> {"ratios": cycle_ratios(), "bpf": BPF us/txn of each traced window}."""
    out = {}
    w = args.pgbench_window_seconds
    for t in tracers:
        if t.kind == "none" or t.failure:
            continue
        try:
            out[t.label] = one_window_run(args, cluster, t, tmp, w)
        except BenchError as e:
            log(f"FAILED windows of {t.label}: {e}")
            out[t.label] = {"failure": str(e)}
    return out


def one_window_run(args, cluster, t, tmp, w):
    cycles = args.pgbench_windows
    # Long enough for every window, with a minute per cycle for a tracer to start and as long
    # as it may take to stop; stopped by a signal once the last untraced window is over.
    seconds = (cycles + 1) * w + cycles * (60 + args.stop_timeout) + 10
    argv = cluster.pgbench_argv(seconds, args.pgbench_clients, args.pgbench_threads) + ["-P", "1", "--progress-timestamp"]
    err_path = os.path.join(tmp, "windows.err")
    with open(err_path, "w") as err:
        p = spawn(argv, subprocess.DEVNULL, err, tracer=False, env=client_env())
    untraced, traced, bpf, stats = [], [], [], []
    alternate = args.window_stats == "alternate"
    try:
        time.sleep(1.0)  # connections
        start = time.time()
        for k in range(cycles):
            window_sleep(p, w, err_path)
            untraced.append((start, time.time()))
            stats_on = window_stats_on(args, k)
            rt = RunningTracer(t, tmp, f"w{k}", args.settle)  # attached: its programs ran
            try:
                if not stats_on:
                    set_bpf_stats("0")
                window_sleep(p, 0, err_path)
                b0, on = window_bpf_ns(t, rt), time.time()
                window_sleep(p, w, err_path)
                b1, off = window_bpf_ns(t, rt), time.time()
                # The next untraced window starts once the tracer is gone, however long that
                # takes: a tracer's exit is not part of any window.
                rt.stop(args.stop_timeout)
            finally:
                set_bpf_stats("1")  # on again for the next tracer's attachment and the rounds
                rt.close()
            traced.append((on, off))
            bpf.append(b1 - b0 if stats_on else None)
            stats.append(stats_on)
            start = time.time()
        window_sleep(p, w, err_path)
        untraced.append((start, time.time()))
    finally:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGINT)
        if wait_exit(p, 30) is None:
            kill_group(p)
    with open(err_path) as f:
        spans = parse_progress(f.read())
    ratios = cycle_ratios(spans, untraced, traced)
    if not ratios:
        raise BenchError(f"no whole second of pgbench's progress in the windows: {tail(err_path, 3)}")
    # BPF time of a traced window over its transactions: its length times its TPS.
    per_txn = {}
    for _, tps, _, i in ratios:
        on, off = traced[i]
        if bpf[i] is not None and t.kind == "bpf" and tps and off > on:
            per_txn[i] = bpf[i] / (off - on) / tps / 1000
    s = summary(ratios)
    log(f"windows {t.label:<34} TPS traced/untraced {s[0]:.3f} ({s[1]:.3f}-{s[2]:.3f}) over {len(ratios)} windows "
        f"of {w} s: {' '.join(f'{r[0]:.3f}' + ('*' if alternate and stats[r[3]] else '') for r in ratios)}"
        f"{' (* the statistics on)' if alternate else ''}")
    return {"ratios": ratios, "bpf": per_txn, "stats_on": stats}


def window_stats_on(args, k):
    """Whether kernel.bpf_stats_enabled stays on in traced window k (from 0): --window-stats on,
    or every other window with alternate, the first one off."""
    return args.window_stats == "on" or (args.window_stats == "alternate" and k % 2 == 1)


def window_bpf_ns(t, rt):
    """run_time_ns so far of a tracer's programs, and of perf offwake's task work callbacks."""
    if t.kind != "bpf":
        return 0
    ns = bpf_sum(rt.prog_ids)[0]
    tw = task_work_time(rt.p.pid)
    return ns + (tw[0] if tw else 0)


def window_sleep(p, seconds, err_path):
    """Sleeps, unless pgbench has ended: then the windows cannot go on."""
    time.sleep(seconds)
    if p.poll() is not None:
        raise BenchError(f"pgbench ended during the windows: {tail(err_path, 3)}")


WINDOW_STATS_TEXT = {
    "off": "the kernel's BPF statistics are off in the traced windows, as on a production host (--window-stats "
           "off): BPF us/txn is the rounds'.",
    "on": "BPF us/txn = run_time_ns in each traced window over its transactions, median (the kernel's BPF "
          "statistics on in the windows, --window-stats on: their cost is in the TPS).",
    "alternate": "the kernel's BPF statistics are off in the first traced window, on in the second, and so on "
                 "(--window-stats alternate): a row for each, BPF us/txn from the windows with them on.",
}


def print_windows_table(args, tracers, windows):
    print()
    print(f"TPS in windows of one pgbench run per tracer: untraced for {args.pgbench_window_seconds} s, then "
          f"{args.pgbench_windows} times traced for {args.pgbench_window_seconds} s and untraced for "
          f"{args.pgbench_window_seconds} s (pgbench -P 1 --progress-timestamp; the seconds in which a tracer "
          "started or stopped do not count).")
    print("traced/untraced = each traced window's TPS over the mean of the untraced windows on either side, "
          "median of windows (range = min-max); 95% interval = where the median ratio lies, with the confidence "
          "shown (the sign test's, which assumes nothing of the ratios' distribution; min-max of 6 windows is "
          "one of 96.9%, and fewer than 6 have none); " + WINDOW_STATS_TEXT[args.window_stats])
    rows = []
    for t in tracers:
        x = windows.get(t.label)
        if x is None:
            continue
        if "failure" in x:
            rows.append([t.label, "failed", "", "", "", "", ""])
            continue
        groups = [(t.label, x["ratios"])]
        if args.window_stats == "alternate":
            groups = [(f"{t.label} [statistics {name}]", [r for r in x["ratios"] if x["stats_on"][r[3]] == on])
                      for name, on in (("off", False), ("on", True))]
        for label, ratios in groups:
            if not ratios:
                rows.append([label, "no window", "", "", "0", "", ""])
                continue
            med, lo, hi = summary(ratios)
            ci = median_interval([r[0] for r in ratios])
            bpf = [x["bpf"][r[3]] for r in ratios if r[3] in x["bpf"]]
            rows.append([label, f"{med:.3f}", f"{ci[0]:.3f}-{ci[1]:.3f} ({ci[2]:.1%})" if ci else "too few windows",
                         f"{lo:.3f}-{hi:.3f}", str(len(ratios)), fmt(statistics.median(r[1] for r in ratios)),
                         fmt(statistics.median(bpf), 1) if bpf else "-"])
    print_table(["tracer", "TPS traced/untraced", "95% interval", "range", "windows", "traced TPS", "BPF us/txn"],
                rows, left=1)


def tracer_name(t):
    return "untraced" if t.kind == "none" else t.label


def program_rows(tracers, results):
    rows = []
    for t in tracers:
        rs = results[(PGBENCH, t.label)]
        names = sorted({name for x in rs for name, (_, c) in x["progs"].items() if c > 0})
        figures = []
        for name in names:
            per_run = [x["progs"][name][0] / x["progs"][name][1] for x in rs if x["progs"].get(name, (0, 0))[1] > 0]
            per_txn = [(x["progs"][name][1] / x["ops"], x["progs"][name][0] / x["ops"]) for x in rs
                       if name in x["progs"]]
            figures.append((statistics.median(p[1] for p in per_txn), name, statistics.median(per_run),
                            statistics.median(p[0] for p in per_txn)))
        for txn_ns, name, run_ns, runs in sorted(figures, reverse=True):  # the dearest first
            rows.append([t.label, name, fmt(us(run_ns), 2), fmt(runs, 1), fmt(us(txn_ns), 1)])
    return rows


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
                    stop_s, _, ru = rt.stop(args.stop_timeout)
                    # The whole summary: its distinct stacks are on its first line of several.
                    with open(rt.err, errors="replace") as f:
                        summary = f.read()
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
    ap.add_argument("--workloads", default="pingpong,pipe,futex64,pgbench",
                    help=f"subset of {','.join(WORKLOADS)} (default: pingpong,pipe,futex64,pgbench)")
    ap.add_argument("--tracers", default=",".join(TRACER_KEYS),
                    help=f"subset of {','.join(TRACER_KEYS)} (untraced runs are always in)")
    ap.add_argument("--offwake-mode", action="append", default=[], metavar="LABEL='ARGS'", dest="offwake_modes",
                    help="adds a row: perf offwake record -a with ARGS (e.g. min1000='--min-block 1000'); "
                         "repeatable; the binary measured only, not the baselines")
    ap.add_argument("--perf612", help="perf 6.12 built with BPF skeletons, for --off-cpu (default: "
                                      "DEPS/perf-6.12/perf of the build, as scripts/build-perf612.sh makes it)")
    pg = ap.add_argument_group("pgbench (a private PostgreSQL cluster from Debian's packages)")
    pg.add_argument("--pgbench-seconds", type=int, default=8, help="-T of each measured run (8)")
    pg.add_argument("--pgbench-clients", type=int, default=8, help="-c (8)")
    pg.add_argument("--pgbench-threads", type=int, default=2, help="-j (2)")
    pg.add_argument("--pgbench-scale", type=int, default=8, help="pgbench -i -s (8)")
    pg.add_argument("--pgbench-warmup", type=int, default=3, help="seconds of one untimed run after -i (3; 0: none)")
    pg.add_argument("--pgbench-windows", type=int, default=6,
                    help="traced windows in one pgbench run per tracer, after the rounds (6; 0: none)")
    pg.add_argument("--pgbench-window-seconds", type=int, default=6, help="length of each window (6)")
    pg.add_argument("--window-stats", choices=["off", "on", "alternate"], default="off",
                    help="kernel.bpf_stats_enabled in the traced windows: off (the default), as on a production "
                         "host; on adds each window's BPF us/txn, and the statistics' own cost to its TPS; "
                         "alternate, off and on in turn, a row for each: what the statistics cost")
    pg.add_argument("--pg-bin", help="PostgreSQL's bin directory (default: the newest /usr/lib/postgresql/*/bin)")
    pg.add_argument("--pg-port", type=int, default=55432,
                    help="the port, which only names the socket in the cluster's own directory: no TCP (55432)")
    ap.add_argument("--keys-rounds", type=int, default=3, help="rounds of the stop-time test (0: skip; default 3)")
    ap.add_argument("--startup-rounds", type=int, default=3,
                    help="system-wide start-up measurements with unwind tables (0: skip; default 3)")
    ap.add_argument("--keys-depth", type=int, default=17, help="2^DEPTH call paths for the stop-time test (17)")
    ap.add_argument("--keys-map-size", type=int, default=262144)
    ap.add_argument("--keys-stack-storage", type=int, default=524288)
    ap.add_argument("--settle", type=float, default=0.5, help="seconds between attach and workload (0.5)")
    # bpftrace prints its maps of stacks at exit, symbolizing each: with pgbench still running
    # (the windows), its first exit took over 120 s here (2026-12-05), later ones 0.5 to 12 s.
    ap.add_argument("--stop-timeout", type=int, default=300,
                    help="seconds a tracer may take to exit after SIGINT before it is killed (300)")
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
    if min(args.pgbench_seconds, args.pgbench_clients, args.pgbench_threads, args.pgbench_scale) < 1:
        ap.error("--pgbench-seconds, --pgbench-clients, --pgbench-threads and --pgbench-scale must be at least 1")
    if args.pgbench_windows < 0 or args.pgbench_window_seconds < 3:
        ap.error("--pgbench-windows must be at least 0 and --pgbench-window-seconds at least 3")
    if args.pgbench_warmup < 0 or not 1 <= args.pg_port <= 65535:
        ap.error("--pgbench-warmup must be at least 0 and --pg-port a port number")
    args.offwake_modes = [parse_mode(ap, m) for m in args.offwake_modes]
    labels = [label for label, _ in args.offwake_modes]
    if len(set(labels)) != len(labels):
        ap.error("--offwake-mode: each LABEL once")
    args.perf612 = os.path.abspath(args.perf612 or default_perf612(args.build))
    return args


def parse_mode(ap, mode):
    """LABEL='ARGS' of --offwake-mode: (LABEL, [args])."""
    label, sep, rest = mode.partition("=")
    try:
        extra = shlex.split(rest)
    except ValueError as e:
        ap.error(f"--offwake-mode {mode}: {e}")
    if not sep or not re.fullmatch(r"[\w.+-]+", label) or not extra:
        ap.error(f"--offwake-mode {mode}: expected LABEL='OPTIONS', e.g. min1000='--min-block 1000'")
    return label, extra


def default_perf612(build):
    """Where scripts/build-perf612.sh puts perf 6.12: the dependencies prefix the build was
    configured with (OFFWAKE_DEPS_PREFIX in its CMakeCache.txt), else build/deps."""
    deps = os.path.join(TOP, "build", "deps")
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            m = re.search(r"^OFFWAKE_DEPS_PREFIX:PATH=(.+)$", f.read(), re.M)
            if m:
                deps = m.group(1).strip()
    except OSError:
        pass
    return os.path.join(deps, "perf-6.12", "perf")


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


def start_cluster(args, cluster):
    """Starts the private PostgreSQL cluster, fills it and warms it up. On an error or Ctrl-C
    half-way, main stops what was started (stop() is safe on a half-made cluster)."""
    cluster.start(args.pgbench_scale)
    if args.pgbench_warmup:
        log(f"pgbench warm-up: {args.pgbench_warmup} s untimed")
        cluster.warm_up(args.pgbench_warmup, args.pgbench_clients, args.pgbench_threads)


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
    cluster = None
    status = 0
    try:
        offwakes = offwake_binaries(args)
        workloads = make_workloads(args)
        tracers = make_tracers(args, offwakes)
        if PGBENCH in workloads:
            cluster = workloads[PGBENCH].cluster
            start_cluster(args, cluster)
        if not os.path.exists("/sys/kernel/tracing/events"):
            log("mounting tracefs on /sys/kernel/tracing")
            subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
        with open(STATS_SYSCTL) as f:
            old_stats = f.read().strip()
        set_bpf_stats("1")
        tmp = tempfile.mkdtemp(prefix="bench-overhead-")
        others = other_tracers()
        if others:
            log(f"warning: other perf, perf-offwake or bpftrace processes are running and will add to every "
                f"row: {' '.join(others)}")
        runs = args.rounds * len(workloads) * len(tracers)
        log(f"{len(workloads)} workloads x {len(tracers)} tracers x {args.rounds} rounds = {runs} runs, "
            f"{args.ops:,} ops each (pgbench: {args.pgbench_seconds} s each); then {args.keys_rounds} stop-time "
            f"rounds per perf-offwake")
        results = overhead_rounds(args, workloads, tracers, tmp)
        windows = (window_runs(args, cluster, tracers, tmp) if cluster and args.pgbench_windows > 0 else None)
        keys = keys_rounds(args, offwakes, tmp) if args.keys_rounds > 0 else None
        others = other_tracers()
        if others:
            log(f"warning: other perf, perf-offwake or bpftrace processes were running at the end: "
                f"{' '.join(others)}")
        print_overhead_table(args, workloads, tracers, results)
        if windows is not None:
            print_windows_table(args, tracers, windows)
        if args.startup_rounds > 0:
            startup_rounds(args, offwakes, tmp)
        if keys:
            print_keys_table(args, offwakes, *keys)
            status = 1 if keys[1] else 0
        print(f"\n{time.strftime('%Y-%m-%d %H:%M')}, {os.uname().release}, {os.cpu_count()} CPUs, "
              f"took {time.monotonic() - START:.0f} s")
        if any(t.failure for t in tracers) or any("failure" in x for x in (windows or {}).values()):
            status = 1
    except Interrupted as e:
        print(f"\nbench-overhead: interrupted ({e}), cleaning up", file=sys.stderr)
        status = 130
    except (BenchError, PgError, subprocess.CalledProcessError, OSError) as e:
        print(f"bench-overhead: {e}", file=sys.stderr)
        status = 1
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
        cleanup_children()
        if cluster:
            cluster.stop()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        if old_stats is not None:
            set_bpf_stats(old_stats)
    sys.exit(status)


if __name__ == "__main__":
    main()
