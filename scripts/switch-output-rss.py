#!/usr/bin/env python3
"""A recording that never ends, as a documented check (issue 24, item 4): a system-wide
`perf offwake record -a --switch-output=1m --switch-max-files=5` for an hour, with the
recorder's RSS sampled all along.

  scripts/switch-output-rss.py BUILD_DIR [--minutes 60] [--switch 1m] [--max-files 5]
                               [--sample-seconds 30] [--out DIR]

The recorder runs from a copy of BUILD_DIR/perf-plugin/perf-offwake in a temporary directory,
so that rebuilding the tree does not disturb it. Every SAMPLE-SECONDS its RSS is printed with
the number of files on disk. At the end (SIGTERM, which writes the last window) the check is:
exactly MAX-FILES files named DIR/perf.data.<16 digits> remain, they are the last ones the
recorder dumped, Debian's perf script and perf report read each, and the RSS is flat: at the
end no more than 10% (plus 2 MiB) above its value after the second window. Prints the RSS at
the start, middle and end. Exit status 0 when all of that holds, 1 otherwise.

Run as root from the source tree after `make -f Makefile.perf build`, e.g. in the background:

  nohup scripts/switch-output-rss.py build/cmake > /tmp/switch-hour.log 2>&1 &
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from proc_status import rss_kib

NAME = re.compile(r"perf\.data\.[0-9]{16}$")


def windows(directory):
    return sorted(n for n in os.listdir(directory) if NAME.match(n))


def say(text):
    print(time.strftime("%H:%M:%S ") + text, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--switch", default="1m", help="--switch-output value (default 1m)")
    ap.add_argument("--max-files", type=int, default=5)
    ap.add_argument("--sample-seconds", type=float, default=30)
    ap.add_argument("--out", help="directory for the files (default: a new one under /var/tmp)")
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="offwake-switch-bin.", dir="/tmp")
    binary = os.path.join(work, "perf-offwake")
    shutil.copy2(os.path.join(a.build, "perf-plugin", "perf-offwake"), binary)
    out = a.out or tempfile.mkdtemp(prefix="offwake-switch-rss.", dir="/var/tmp")
    os.makedirs(out, exist_ok=True)
    cmd = [binary, "record", "-a", f"--switch-output={a.switch}", f"--switch-max-files={a.max_files}",
           "-o", os.path.join(out, "perf.data")]
    say("command: " + " ".join(cmd))
    say(f"files in {out}, recorder's stderr in {out}/record.err; {a.minutes:g} minutes")
    err = open(os.path.join(out, "record.err"), "w")
    rec = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)

    samples = []  # (seconds, rss KiB, files on disk)
    start = time.time()
    end = start + a.minutes * 60
    while time.time() < end and rec.poll() is None:
        time.sleep(min(a.sample_seconds, max(0.0, end - time.time())))
        rss = rss_kib(rec.pid)
        if rss is None:
            break
        samples.append((time.time() - start, rss, len(windows(out))))
        say(f"t={samples[-1][0]:6.0f}s rss={rss} KiB files={samples[-1][2]}")
    if rec.poll() is not None:
        err.close()
        say(f"the recorder exited early (status {rec.returncode}):\n" + open(os.path.join(out, "record.err")).read())
        return 1
    rec.send_signal(signal.SIGTERM)
    status = rec.wait()
    err.close()
    log = open(os.path.join(out, "record.err")).read()
    dumped = re.findall(r"\[ perf offwake record: Dump (\S+) \]", log)
    lost = re.findall(r"dump data: .*?(\d+) blocks lost", log)
    missing = re.findall(r"dump data: .*?(\d+) of \d+ sample stacks missing", log)
    full = re.findall(r"dump data: .*?\((\d+) store full\) \]", log)
    ok = status == 0
    say(f"recorder status {status}; {len(dumped)} files dumped, blocks lost per window: "
        f"{', '.join(lost[-10:])}{' ...' if len(lost) > 10 else ''}; sample stacks missing per window: "
        f"{', '.join(missing[-10:])}{' ...' if len(missing) > 10 else ''}; of them for a full stack store: "
        f"{', '.join(full[-10:])}{' ...' if len(full) > 10 else ''}")
    summary = [l for l in log.splitlines() if l.startswith("[ perf offwake record:") and "Dump" not in l
               and "dump data" not in l]
    for line in summary:
        print("  " + line)

    kept = windows(out)
    want = [os.path.basename(p) for p in dumped[-a.max_files:]]
    if kept != want:
        say(f"FAIL: files on disk {kept}, expected the last {a.max_files} dumped {want}")
        ok = False
    for name in kept:
        path = os.path.join(out, name)
        script = subprocess.run(["perf", "script", "-i", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        samples_read = script.stdout.count(b"offwake-time")
        report = subprocess.run(["perf", "report", "--stdio", "--no-children", "-i", path], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        good = script.returncode == 0 and report.returncode == 0 and samples_read > 0
        say(f"{name}: {os.path.getsize(path)} bytes, mode {oct(os.stat(path).st_mode & 0o777)}, perf script "
            f"{script.returncode} ({samples_read} offwake-time samples), perf report {report.returncode}"
            f"{'' if good else '  FAIL'}")
        ok &= good

    if len(samples) >= 3:
        # Flat after a warm-up of a quarter of the run (at least two windows): the first minutes
        # fill the unwind tables (BPF memory the recorder writes: --unwind-memory) as the
        # machine's binaries run, and the caches of the first windows grow to their size.
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}
        interval = int(a.switch[:-1]) * unit[a.switch[-1]] if a.switch[-1:] in unit else 0
        warm = max(2 * interval, samples[-1][0] / 4)
        settle = next((s for s in samples if s[0] >= warm), samples[0])
        first, middle, last = samples[0], samples[len(samples) // 2], samples[-1]
        say(f"RSS: start (t={first[0]:.0f}s) {first[1]} KiB, after the warm-up (t={settle[0]:.0f}s) "
            f"{settle[1]} KiB, middle (t={middle[0]:.0f}s) {middle[1]} KiB, end (t={last[0]:.0f}s) {last[1]} KiB, "
            f"peak {max(s[1] for s in samples)} KiB")
        if last[1] > settle[1] * 1.10 + 2048:
            say("FAIL: RSS grew by more than 10% (+2 MiB) after the warm-up")
            ok = False
    say("PASS" if ok else "FAIL")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
