# offwake-collapse.py: off-wake stacks of a `perf offwake record` recording as folded stacks,
# weighted by nanoseconds blocked, in bcc offwaketime's format:
#
#   target_comm;blocked frames root->leaf;--;waker frames leaf->root;waker_comm NANOSECONDS
#
# and, for a recording with wakeup chains (perf offwake record --chain-depth N), each further
# hop after the waker: "--", the frames of that hop's block root->leaf (the previous hop's
# waker, in its latest block before that wakeup), "--", the frames of its waker leaf->root;
# the line ends with the last waker's comm:
#
#   target_comm;blocked;--;hop 1 waker;--;hop 2 blocked;--;hop 2 waker;...;last_waker_comm NS
#
# (a block's leaf meets the leaf of the stack that woke it; a waker's root meets the root of
# the same thread's block before). `perf offwake report --folded` prints the same lines.
# ready for offwake-flamegraph.py --folded (or any flame graph tool that reads folded stacks).
#
#   perf script -i perf.data -s scripts/offwake-collapse.py [-- [--kernel-only | --user-only]
#                                    [--pid-tid] [--min NS] [--sort name|time]]
#
#   --kernel-only, --user-only  keep only kernel (or user) frames, in every stack
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
# Each offwake-time sample (the blocked thread) is grouped with the offwake-waker sample and
# the offwake-hop-* samples that immediately follow it (offwake_stacks.WakerPairing). When the
# host gives the blocked sample a 'waker' dict and a 'chain' list (as `perf offwake script -s`
# does), those are used and the other samples are ignored. A blocked sample without its waker
# is folded with the waker "[unknown waker]", and so is a hop of a chain cut short that lost
# its waker. A waker named without its stacks (woken before its block reached --min-block or
# its sampling threshold: the raw data's waker flags say so) has "[stacks not taken: woken
# early]" in their place, a hop's too.
# Runs in perf's own Python (perf script -s) and in `perf offwake script -s`.
import sys
from collections import defaultdict

from offwake_stacks import (SEPARATOR, UNKNOWN_WAKER, ArgumentParser, WakerPairing, folded_comm,
                            add_only_options, frames_root_first, thread_of, waker_frames,
                            wakers_not_taken)


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
        "not_taken": wakers_not_taken(param_dict),
    }


def fold(blocked, waker, hops):
    global unpaired
    parts = [blocked["name"]] + blocked["frames"] + [SEPARATOR]
    if waker is None:
        unpaired += 1
        parts.append(UNKNOWN_WAKER)
    else:
        not_taken = blocked["not_taken"]
        parts += waker_frames(list(reversed(frames(waker.get("callchain")))), not_taken, 1)
        last = thread_name(waker)
        for hop, (hop_blocked, hop_waker) in enumerate(hops, 2):
            parts += [SEPARATOR] + frames(hop_blocked.get("callchain")) + [SEPARATOR]
            if hop_waker is None:
                last = UNKNOWN_WAKER
                break
            parts += waker_frames(list(reversed(frames(hop_waker.get("callchain")))), not_taken, hop)
            last = thread_name(hop_waker)
        parts.append(last)
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
    if pairing.cut_short:
        sys.stderr.write("offwake-collapse: %d wakeup chains cut short\n" % pairing.cut_short)
