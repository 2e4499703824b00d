# offwake-top.py: the blocked stacks of a `perf offwake record` recording that cost the most
# off-CPU time, each with the wakers that ended its blocks, as an aligned text table.
#
#   perf script -i perf.data -s scripts/offwake-top.py [-- [-n N] [--wakers M] [--depth D]]
#
#   -n N        show the N blocked stacks with the most time (default 10)
#   --wakers M  show up to M wakers under each stack (default 3)
#   --depth D   name a stack by up to D user frames, innermost first (default 3)
#
# A blocked stack is one thread name (comm) with one callchain. Its row names the comm, the
# user frames from the innermost out, and, in brackets, the kernel function it blocked in
# (the innermost kernel frame that is not the scheduler). A waker row names the waker's comm
# and its innermost user function, or, for wakers without user frames (interrupts, kernel
# threads), its innermost kernel function past the generic wake-up code. SHARE is the share
# of all blocked time, for stacks and wakers alike.
#
# perf 6.1 hands everything after the data options to the script as sys.argv[1:]; options
# that start with "-" must come after "--", or perf takes them for its own (-n is perf's).
#
# With wakeup chains (perf offwake record --chain-depth N), a waker row goes on with who woke
# the waker, hop by hop: "woken by B  send < C  relay < [hardirq]  tick" (B was woken by C, C
# by an interrupt); the same waker with another chain is another row.
#
# Each offwake-time sample (the blocked thread) is grouped with the offwake-waker sample and
# the offwake-hop-* samples that immediately follow it. When the host gives the blocked
# sample a 'waker' dict and a 'chain' list (as `perf offwake script -s` does), those are used
# and the other samples are ignored. A blocked sample without its waker counts for the waker
# "[unknown waker]".
# Runs in perf's own Python (perf script -s) and in `perf offwake script -s`.
import sys
from collections import defaultdict

from offwake_stacks import (UNKNOWN_WAKER, ArgumentParser, WakerPairing, frame_name, human,
                            is_kernel)

# Frames every block or wakeup passes through: they say nothing about why.
SCHEDULER_PREFIXES = ("__schedule", "schedule", "io_schedule", "preempt_schedule")
WAKEUP_PREFIXES = ("try_to_wake_up", "ttwu_", "wake_up_", "__wake_up", "wake_q",
                   "default_wake_function", "autoremove_wake_function", "woken_wake_function")


def parse_args(argv):
    p = ArgumentParser(prog="offwake-top", description="top blocked stacks and their wakers")
    p.add_argument("-n", type=int, default=10, metavar="N", help="blocked stacks to show")
    p.add_argument("--wakers", type=int, default=3, metavar="M", help="wakers per stack")
    p.add_argument("--depth", type=int, default=3, metavar="D", help="user frames per stack name")
    args = p.parse_args(argv)
    for name in ("n", "wakers", "depth"):
        if getattr(args, name) < 1:
            p.error("%s must be at least 1" % ("-n" if name == "n" else "--" + name))
    return args


args = parse_args(sys.argv[1:])


def split_frames(callchain):
    """(kernel names, user names), each innermost first, as the callchain comes."""
    kernel, user = [], []
    for frame in callchain or []:
        (kernel if is_kernel(frame) else user).append(frame_name(frame))
    return kernel, user


def first_not(names, prefixes):
    for name in names:
        if not name.startswith(prefixes):
            return name
    return names[0] if names else None


def stack_label(comm, callchain):
    kernel, user = split_frames(callchain)
    label = comm
    if user:
        label += "  " + " < ".join(user[:args.depth])
        if len(user) > args.depth:
            label += " < ..."
    blocked_in = first_not(kernel, SCHEDULER_PREFIXES)
    if blocked_in:
        label += "  [%s]" % blocked_in
    return label


def waker_label(comm, callchain):
    kernel, user = split_frames(callchain)
    where = user[0] if user else first_not(kernel, WAKEUP_PREFIXES)
    return "%s  %s" % (comm, where) if where else comm


stack_ns = defaultdict(int)
waker_ns = defaultdict(lambda: defaultdict(int))  # stack label -> waker label -> ns
total_ns = 0


def blocked_of(param_dict):
    """(stack label, period)"""
    return (stack_label(param_dict.get("comm", "[unknown]"), param_dict.get("callchain")),
            param_dict.get("sample", {}).get("period", 0))


def add(blocked, waker, hops):
    global total_ns
    stack, period = blocked
    if waker is None:
        label = UNKNOWN_WAKER
    else:
        label = waker_label(waker.get("comm", "[unknown]"), waker.get("callchain"))
        for _, hop_waker in hops:
            if hop_waker is None:
                label += " < " + UNKNOWN_WAKER
                break
            label += " < " + waker_label(hop_waker.get("comm", "[unknown]"), hop_waker.get("callchain"))
    stack_ns[stack] += period
    waker_ns[stack][label] += period
    total_ns += period


pairing = WakerPairing(blocked_of, add)


def process_event(param_dict):
    pairing.process_event(param_dict)


def micro():
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "\u00b5".encode(encoding)
        return "\u00b5s"
    except (UnicodeEncodeError, LookupError):
        return "us"


def share(ns):
    return "%.1f%%" % (100.0 * ns / total_ns) if total_ns else "-"


def by_time(items):
    return sorted(items, key=lambda kv: (-kv[1], kv[0]))


def trace_end():
    pairing.end()
    us = micro()
    rows = [("#", "TIME", "SHARE", "BLOCKED STACK / waker")]
    for rank, (stack, ns) in enumerate(by_time(stack_ns.items())[:args.n], 1):
        rows.append((str(rank), human(ns, us), share(ns), stack))
        for waker, wns in by_time(waker_ns[stack].items())[:args.wakers]:
            rows.append(("", human(wns, us), share(wns), "    woken by " + waker))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("%*s  %*s  %*s  %s" % (widths[0], row[0], widths[1], row[1], widths[2], row[2], row[3]))
    print("total blocked %s in %d stacks" % (human(total_ns, us), len(stack_ns)))
