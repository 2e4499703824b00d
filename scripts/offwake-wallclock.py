# offwake-wallclock.py: one wall-clock profile from a `perf offwake record --on-cpu` recording.
#
# On-CPU time (samples of a time-based event: cpu-clock or task-clock, whose periods are
# nanoseconds) and off-CPU time (offwake-time samples, whose periods are nanoseconds blocked)
# are summed per stack and printed as folded stacks, "comm;root;...;leaf NANOSECONDS", ready
# for flamegraph tools. Off-CPU stacks end in a "[off-cpu]" frame, so both kinds can be told
# apart in one graph.
#
#   perf script -i perf.data -s scripts/offwake-wallclock.py [-- --no-mark] [--min NS]
#
# Runs in perf's own Python (perf script -s) and in `perf offwake script -s`.
import sys
from collections import defaultdict

from offwake_stacks import BLOCKED_EVENT, FOLLOWER_EVENTS, frame_name

TIME_EVENTS = ("cpu-clock", "task-clock")

mark = "--no-mark" not in sys.argv
minimum = 0
if "--min" in sys.argv:
    minimum = int(sys.argv[sys.argv.index("--min") + 1])

totals = defaultdict(int)
skipped = defaultdict(int)
kind_ns = defaultdict(int)


def process_event(param_dict):
    name = param_dict.get("ev_name", "")
    if name in TIME_EVENTS:
        kind = "on-cpu"
    elif name == BLOCKED_EVENT:
        kind = "off-cpu"
    else:
        skipped[name] += 1
        return
    period = param_dict["sample"]["period"]
    frames = [frame_name(f) for f in reversed(param_dict.get("callchain", []))]
    stack = [param_dict.get("comm", "[unknown]")] + frames
    if kind == "off-cpu" and mark:
        stack.append("[off-cpu]")
    totals[";".join(stack)] += period
    kind_ns[kind] += period


def trace_end():
    # Largest first; equal weights by stack text, as perf offwake report --wallclock --folded.
    for stack, ns in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])):
        if ns >= minimum:
            print("%s %d" % (stack, ns))
    for name, n in sorted(skipped.items()):
        if name not in FOLLOWER_EVENTS:  # the waker and chain samples of offwake-time ones
            sys.stderr.write("offwake-wallclock: skipped %d samples of %s (not a time event)\n" % (n, name))
    sys.stderr.write("offwake-wallclock: on-CPU %.3f s, off-CPU %.3f s\n"
                     % (kind_ns["on-cpu"] / 1e9, kind_ns["off-cpu"] / 1e9))
