# offwake-collapse.py: off-wake stacks of a `perf offwake record` recording as folded stacks,
# weighted by nanoseconds blocked, in bcc offwaketime's format:
#
#   target_comm;blocked frames root->leaf;--;waker frames leaf->root;waker_comm NANOSECONDS
#
# ready for offwake-flamegraph.py --folded (or any flame graph tool that reads folded stacks).
#
#   perf script -i perf.data -s scripts/offwake-collapse.py [-- [--kernel-only | --user-only]
#                                    [--pid-tid] [--min NS] [--sort name|time]]
#
#   --kernel-only, --user-only  keep only kernel (or user) frames, in both stacks
#   --pid-tid                   name threads "comm-PID/TID"; interrupt wakers ("[hardirq]",
#                               "[softirq]", "[nmi]", "[no waker seen]") stay bare, their ids
#                               are not real threads
#   --min NS                    drop lines of less than NS nanoseconds (after summing)
#   --sort name                 lines sorted by stack text (default; deterministic)
#   --sort time                 lines sorted by time, largest first, ties by stack text
#
# perf 6.1 hands everything after the data options to the script as sys.argv[1:]; options
# that start with "-" must come after "--", or perf takes them for its own.
#
# Each offwake-time sample (the blocked thread) is paired with the offwake-waker sample that
# immediately follows it. When the host gives the blocked sample a 'waker' dict (as
# `perf offwake script -s` does), that is used and offwake-waker samples are ignored. A
# blocked sample without its waker is folded with the waker "[unknown waker]".
# Runs in perf's own Python (perf script -s) and in `perf offwake script -s`.
import argparse
import sys
from collections import defaultdict

BLOCKED_EVENT = "offwake-time"
WAKER_EVENT = "offwake-waker"
UNKNOWN_WAKER = "[unknown waker]"
SEPARATOR = "--"
KERNEL_START = 1 << 63  # kernel text lives in the upper half of the address space


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("%s: %s\n" % (self.prog, message))
        sys.exit(2)


def parse_args(argv):
    p = ArgumentParser(prog="offwake-collapse", description="folded off-wake stacks")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--kernel-only", action="store_true", help="kernel frames only")
    only.add_argument("--user-only", action="store_true", help="user frames only")
    p.add_argument("--pid-tid", action="store_true", help='name threads "comm-PID/TID"')
    p.add_argument("--min", type=int, default=0, metavar="NS", help="drop lines below NS")
    p.add_argument("--sort", choices=("name", "time"), default="name")
    args = p.parse_args(argv)
    if args.min < 0:
        p.error("--min must not be negative")
    return args


args = parse_args(sys.argv[1:])


def frame_name(frame):
    sym = frame.get("sym")
    name = sym.get("name") if sym else None
    if not name:
        return "[unknown]"
    return name.replace(";", ":").replace("\n", " ")


def frames_root_first(callchain):
    """Names of the frames the options keep, root first (callchains come leaf first)."""
    names = []
    for frame in reversed(callchain or []):
        kernel = frame.get("ip", 0) >= KERNEL_START
        if (args.kernel_only and not kernel) or (args.user_only and kernel):
            continue
        names.append(frame_name(frame))
    return names


def thread_name(comm, pid, tid):
    comm = (comm or "[unknown]").replace(";", ":").replace(" ", "_")
    if not args.pid_tid or comm.startswith("["):
        return comm
    return "%s-%d/%d" % (comm, pid, tid)


totals = defaultdict(int)
pending = None  # the offwake-time sample waiting for its offwake-waker
unpaired = 0


def blocked_of(param_dict):
    sample = param_dict.get("sample", {})
    return {
        "name": thread_name(param_dict.get("comm"), sample.get("pid", 0), sample.get("tid", 0)),
        "frames": frames_root_first(param_dict.get("callchain")),
        "period": sample.get("period", 0),
    }


def fold(blocked, waker_name, waker_frames_root_first):
    parts = [blocked["name"]] + blocked["frames"] + [SEPARATOR]
    parts += list(reversed(waker_frames_root_first)) + [waker_name]
    totals[";".join(parts)] += blocked["period"]


def fold_unpaired(blocked):
    global unpaired
    unpaired += 1
    fold(blocked, UNKNOWN_WAKER, [])


def process_event(param_dict):
    global pending
    name = param_dict.get("ev_name", "")
    if name == WAKER_EVENT:
        if pending is not None:
            sample = param_dict.get("sample", {})
            waker = thread_name(param_dict.get("comm"), sample.get("pid", 0), sample.get("tid", 0))
            fold(pending, waker, frames_root_first(param_dict.get("callchain")))
            pending = None
        return
    if pending is not None:
        fold_unpaired(pending)
        pending = None
    if name != BLOCKED_EVENT:
        return
    blocked = blocked_of(param_dict)
    waker = param_dict.get("waker")
    if waker is None:
        pending = blocked
    else:
        fold(blocked, thread_name(waker.get("comm"), waker.get("pid", 0), waker.get("tid", 0)),
             frames_root_first(waker.get("callchain")))


def trace_end():
    if pending is not None:
        fold_unpaired(pending)
    lines = [(stack, ns) for stack, ns in totals.items() if ns >= args.min]
    if args.sort == "time":
        lines.sort(key=lambda kv: (-kv[1], kv[0]))
    else:
        lines.sort()
    for stack, ns in lines:
        print("%s %d" % (stack, ns))
    if unpaired:
        sys.stderr.write("offwake-collapse: %d blocked samples without a waker sample\n" % unpaired)
