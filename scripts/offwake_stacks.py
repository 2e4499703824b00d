# offwake_stacks.py: what the bundled offwake-*.py scripts share; imported by them, not run.
#
# Frame names, callchains root first with --kernel-only/--user-only, the pairing of each
# offwake-time sample (the blocked thread) with its waker, argument errors, and times for
# people. Both `perf script -s` and `perf offwake script -s` put the script's own folder first
# on sys.path, so the scripts find this module next to them (installed alongside them too).
#
# Pairing: each offwake-time sample is paired with the offwake-waker sample that immediately
# follows it. When the host gives the blocked sample a 'waker' dict (as `perf offwake script
# -s` does), that is used and offwake-waker samples are ignored. A blocked sample without its
# waker is handed on with no waker (the scripts show it as UNKNOWN_WAKER).
import argparse
import sys

BLOCKED_EVENT = "offwake-time"
WAKER_EVENT = "offwake-waker"
UNKNOWN_WAKER = "[unknown waker]"
SEPARATOR = "--"
KERNEL_START = 1 << 63  # kernel text lives in the upper half of the address space


class ArgumentParser(argparse.ArgumentParser):
    """Usage errors as "PROG: MESSAGE" on stderr and exit status 2, with no usage text."""

    def error(self, message):
        sys.stderr.write("%s: %s\n" % (self.prog, message))
        sys.exit(2)


def add_only_options(parser):
    """--kernel-only and --user-only, which exclude each other."""
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--kernel-only", action="store_true", help="kernel frames only")
    only.add_argument("--user-only", action="store_true", help="user frames only")


def frame_name(frame):
    sym = frame.get("sym")
    name = sym.get("name") if sym else None
    return name or "[unknown]"


def is_kernel(frame):
    return frame.get("ip", 0) >= KERNEL_START


def frames_root_first(callchain, kernel_only=False, user_only=False):
    """Names of the frames kept, root first (callchains come leaf first)."""
    names = []
    for frame in reversed(callchain or []):
        kernel = is_kernel(frame)
        if (kernel_only and not kernel) or (user_only and kernel):
            continue
        names.append(frame_name(frame))
    return names


def folded_comm(comm):
    """A comm as the folded format writes it: no ';' (the frame separator), no ' ' (before the count)."""
    return (comm or "[unknown]").replace(";", ":").replace(" ", "_")


def thread_of(param_dict):
    """A sample's thread as a dict shaped like the host's 'waker' dict: "comm", "pid", "tid"
    and "callchain", each only if the sample has it."""
    thread = {key: param_dict[key] for key in ("comm", "callchain") if key in param_dict}
    sample = param_dict.get("sample", {})
    thread.update((key, sample[key]) for key in ("pid", "tid") if key in sample)
    return thread


class WakerPairing:
    """Pairs offwake-time samples with their wakers; feed it every sample, then call end().

    blocked_of(param_dict) turns an offwake-time sample into whatever the script keeps of it;
    pair(blocked, waker) receives that with its waker (a dict shaped like the host's 'waker'
    dict, see thread_of), or with None when no waker was seen.
    """

    def __init__(self, blocked_of, pair):
        self.blocked_of = blocked_of
        self.pair = pair
        self.pending = None  # the blocked sample waiting for its offwake-waker

    def process_event(self, param_dict):
        name = param_dict.get("ev_name", "")
        if name == WAKER_EVENT:
            if self.pending is not None:
                self.pair(self.pending, thread_of(param_dict))
                self.pending = None
            return
        self.end()
        if name != BLOCKED_EVENT:
            return
        blocked = self.blocked_of(param_dict)
        waker = param_dict.get("waker")
        if waker is None:
            self.pending = blocked
        else:
            self.pair(blocked, waker)

    def end(self):
        """Hands on the blocked sample still waiting, without a waker."""
        if self.pending is not None:
            self.pair(self.pending, None)
            self.pending = None


def human(ns, us="us"):
    """A time for people; us names microseconds."""
    if ns < 1000:
        return "%d ns" % ns
    if ns < 1000000:
        return "%.2f %s" % (ns / 1e3, us)
    if ns < 1000000000:
        return "%.2f ms" % (ns / 1e6)
    return "%.3f s" % (ns / 1e9)
