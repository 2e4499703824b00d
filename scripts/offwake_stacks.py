# offwake_stacks.py: what the bundled offwake-*.py scripts share; imported by them, not run.
#
# Frame names, callchains root first with --kernel-only/--user-only, the grouping of each
# offwake-time sample (the blocked thread) with its waker and wakeup chain, argument errors,
# and times for people. Both `perf script -s` and `perf offwake script -s` put the script's
# own folder first on sys.path, so the scripts find this module next to them (installed
# alongside them too).
#
# Grouping: each offwake-time sample is followed by its offwake-waker sample (hop 1) and, in a
# recording with wakeup chains (perf offwake record --chain-depth N), by an
# offwake-hop-blocked and an offwake-hop-waker sample per further hop, as many as the
# sample's raw data announces (bits 0-7 of its chain field). When the host gives the blocked
# sample a 'waker' dict and a 'chain' list (as `perf offwake script -s` does), those are used
# and the offwake-waker and offwake-hop-* samples are ignored. A blocked sample without its
# waker is handed on with no waker (the scripts show it as UNKNOWN_WAKER); a chain cut short
# (a truncated recording) with the hops that are there, the last one perhaps without its waker.
import argparse
import struct
import sys

BLOCKED_EVENT = "offwake-time"
WAKER_EVENT = "offwake-waker"
HOP_BLOCKED_EVENT = "offwake-hop-blocked"
HOP_WAKER_EVENT = "offwake-hop-waker"
FOLLOWER_EVENTS = (WAKER_EVENT, HOP_BLOCKED_EVENT, HOP_WAKER_EVENT)  # come after offwake-time
UNKNOWN_WAKER = "[unknown waker]"
# Where the stacks of a waker named without them would be: one that woke its block before the
# block reached --min-block or its sampling threshold (perf offwake report --folded's too).
STACKS_NOT_TAKEN = "[stacks not taken: woken early]"
WAKER_EARLY = 0x80  # OFFWAKE_WAKER_EARLY of the raw data's waker flags (bpf-progs/offwake.h)
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
    """A comm as the folded format writes it: no ';' (the frame separator), no ' ' (before the
    count) nor control character (a newline would end the line): '_' for those."""
    return "".join("_" if c == " " or c < " " or c == "\x7f" else c
                   for c in (comm or "[unknown]").replace(";", ":"))


def thread_of(param_dict):
    """A sample's thread as a dict shaped like the host's 'waker' dict: "comm", "pid", "tid"
    and "callchain", each only if the sample has it."""
    thread = {key: param_dict[key] for key in ("comm", "callchain") if key in param_dict}
    sample = param_dict.get("sample", {})
    thread.update((key, sample[key]) for key in ("pid", "tid") if key in sample)
    return thread


def announced_hops(param_dict):
    """The hops after the first that the offwake-time sample's raw data announces (OffwakeRaw:
    u32 version, u32 state, u64 count, u64 max_ns, u32 waker_flags, u32 chain; bits 0-7)."""
    raw = param_dict.get("raw_buf")
    if not raw or len(raw) < 32:
        return 0
    return struct.unpack_from("<I", raw, 28)[0] & 0xFF


def wakers_not_taken(param_dict):
    """Per hop, hop 1 first, whether the offwake-time sample's raw data says that hop's waker
    was named without its stacks (WAKER_EARLY). The layout is perf-plugin/samples/offwake_raw.h's:
    u32 version, u32 state, u64 count, u64 max_ns, u32 waker_flags, u32 chain (hops in bits
    0-7); a head of 32 (version 1), 56 (2) or 64 bytes (3 and later); then per further hop u32
    state, u32 waker_flags."""
    raw = param_dict.get("raw_buf")
    if not raw or len(raw) < 32:
        return []
    version, = struct.unpack_from("<I", raw, 0)
    head = 32 if version < 2 else 56 if version == 2 else 64
    waker_flags, chain = struct.unpack_from("<II", raw, 24)
    flags = [waker_flags]
    for i in range(chain & 0xFF):
        at = head + 8 * i + 4
        if at + 4 > len(raw):
            break
        flags.append(struct.unpack_from("<I", raw, at)[0])
    return [bool(f & WAKER_EARLY) for f in flags]


def waker_frames(frames, not_taken, hop):
    """A waker's frames as the folded stacks show them: STACKS_NOT_TAKEN alone for one named
    without its stacks (hop `hop`, 1 for the waker, of wakers_not_taken's list `not_taken`)."""
    if not frames and hop <= len(not_taken) and not_taken[hop - 1]:
        return [STACKS_NOT_TAKEN]
    return frames


def hops_of_chain(chain):
    """The host's 'chain' list as WakerPairing hands hops on: (blocked, waker) per hop after the
    first; waker None when the hop lost its waker sample."""
    return [(hop["blocked"], hop if "tid" in hop else None) for hop in (chain or [])[1:]]


class WakerPairing:
    """Groups offwake-time samples with their wakers and chains; feed it every sample, then
    call end().

    blocked_of(param_dict) turns an offwake-time sample into whatever the script keeps of it;
    pair(blocked, waker, hops) receives that with its waker (a dict shaped like the host's
    'waker' dict, see thread_of, or None when no waker was seen) and its further hops, hop 2
    first: a list of (blocked, waker) thread dicts (waker None when it is missing), empty
    without a chain. cut_short counts the chains that had fewer hops than announced.
    """

    def __init__(self, blocked_of, pair):
        self.blocked_of = blocked_of
        self.pair = pair
        self.pending = None  # [blocked, samples after it, samples announced]
        self.cut_short = 0

    def process_event(self, param_dict):
        name = param_dict.get("ev_name", "")
        if self.pending is not None and self.follows(name):
            self.pending[1].append(thread_of(param_dict))
            if len(self.pending[1]) == self.pending[2]:
                self.end()
            return
        self.end()
        if name != BLOCKED_EVENT:
            return
        blocked = self.blocked_of(param_dict)
        if "waker" in param_dict or "chain" in param_dict:
            if "chain_missing" in param_dict:
                self.cut_short += 1
            self.pair(blocked, param_dict.get("waker"), hops_of_chain(param_dict.get("chain")))
        else:
            self.pending = [blocked, [], 1 + 2 * announced_hops(param_dict)]

    def follows(self, name):
        """Whether a sample of event `name` is the next one of the pending group."""
        n = len(self.pending[1])
        if n >= self.pending[2]:
            return False
        if n == 0:
            return name == WAKER_EVENT
        return name == (HOP_BLOCKED_EVENT if n % 2 else HOP_WAKER_EVENT)

    def end(self):
        """Hands on the blocked sample still waiting, with what followed it."""
        if self.pending is None:
            return
        blocked, samples, announced = self.pending
        self.pending = None
        if 1 < announced and len(samples) < announced:
            self.cut_short += 1
        waker = samples[0] if samples else None
        hops = [(samples[i], samples[i + 1] if i + 1 < len(samples) else None)
                for i in range(1, len(samples), 2)]
        self.pair(blocked, waker, hops)


def human(ns, us="us"):
    """A time for people; us names microseconds."""
    if ns < 1000:
        return "%d ns" % ns
    if ns < 1000000:
        return "%.2f %s" % (ns / 1e3, us)
    if ns < 1000000000:
        return "%.2f ms" % (ns / 1e6)
    return "%.3f s" % (ns / 1e9)
