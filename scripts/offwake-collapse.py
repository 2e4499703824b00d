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
import sys
from collections import defaultdict

from offwake_stacks import (SEPARATOR, UNKNOWN_WAKER, ArgumentParser, WakerPairing, folded_comm,
                            add_only_options, frames_root_first, thread_of)


def parse_args(argv):
    p = ArgumentParser(prog="offwake-collapse", description="folded off-wake stacks")
    add_only_options(p)
    p.add_argument("--pid-tid", action="store_true", help='name threads "comm-PID/TID"')
    p.add_argument("--min", type=int, default=0, metavar="NS", help="drop lines below NS")
    p.add_argument("--sort", choices=("name", "time"), default="name")
    args = p.parse_args(argv)
    if args.min < 0:
        p.error("--min must not be negative")
    return args


args = parse_args(sys.argv[1:])


def frames(callchain):
    """The frames the options keep, root first, named so they fold (no ';', no newline)."""
    return [name.replace(";", ":").replace("\n", " ")
            for name in frames_root_first(callchain, args.kernel_only, args.user_only)]


def thread_name(thread):
    comm = folded_comm(thread.get("comm"))
    if not args.pid_tid or comm.startswith("["):
        return comm
    return "%s-%d/%d" % (comm, thread.get("pid", 0), thread.get("tid", 0))


totals = defaultdict(int)
unpaired = 0


def blocked_of(param_dict):
    return {
        "name": thread_name(thread_of(param_dict)),
        "frames": frames(param_dict.get("callchain")),
        "period": param_dict.get("sample", {}).get("period", 0),
    }


def fold(blocked, waker):
    global unpaired
    if waker is None:
        unpaired += 1
        waker_name, waker_frames = UNKNOWN_WAKER, []
    else:
        waker_name, waker_frames = thread_name(waker), frames(waker.get("callchain"))
    parts = [blocked["name"]] + blocked["frames"] + [SEPARATOR]
    parts += list(reversed(waker_frames)) + [waker_name]
    totals[";".join(parts)] += blocked["period"]


pairing = WakerPairing(blocked_of, fold)


def process_event(param_dict):
    pairing.process_event(param_dict)


def trace_end():
    pairing.end()
    lines = [(stack, ns) for stack, ns in totals.items() if ns >= args.min]
    if args.sort == "time":
        lines.sort(key=lambda kv: (-kv[1], kv[0]))
    else:
        lines.sort()
    for stack, ns in lines:
        print("%s %d" % (stack, ns))
    if unpaired:
        sys.stderr.write("offwake-collapse: %d blocked samples without a waker sample\n" % unpaired)
