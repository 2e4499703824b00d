# offwake-flamegraph.py: one self-contained SVG off-wake flame graph.
#
# The blocked thread's stack stands at the bottom, root at the bottom, as in an off-CPU flame
# graph; above its leaf a "--" frame separates it from the waker's stack, drawn inverted (its
# leaf first, its root and comm at the top), as bcc's offwaketime draws them. Widths are
# proportional to nanoseconds blocked. Blocked frames are blue, waker frames purple, the
# separator grey. Hovering a frame shows its name, time and share of the total. The SVG
# references nothing outside itself (no scripts, fonts or images to fetch).
#
#   perf script -i perf.data -s scripts/offwake-flamegraph.py [-- [-o FILE]
#                  [--kernel-only | --user-only] [--title TEXT] [--width PX] [--min NS]]
#   python3 scripts/offwake-flamegraph.py --folded FILE|- [-o FILE] [--title TEXT] [--width PX]
#                  [--min NS]
#
#   -o FILE                     where to write the SVG (default offwake.svg)
#   --folded FILE               read folded off-wake stacks (offwake-collapse.py's output; "-"
#                               is standard input) instead of samples; works in plain python3
#   --kernel-only, --user-only  keep only kernel (or user) frames (not with --folded)
#   --min NS                    leave out stacks of less than NS nanoseconds
#
# perf 6.1 hands everything after the data options to the script as sys.argv[1:]; options
# that start with "-" must come after "--", or perf takes them for its own.
#
# With wakeup chains (perf offwake record --chain-depth N) each further hop stacks upward in
# the order of offwake-collapse.py's line: "--", the hop's blocked stack (blue, root first),
# "--", its waker's stack (purple, inverted), the last waker's comm at the top.
#
# Each offwake-time sample (the blocked thread) is grouped with the offwake-waker sample and
# the offwake-hop-* samples that immediately follow it. When the host gives the blocked
# sample a 'waker' dict and a 'chain' list (as `perf offwake script -s` does), those are used
# and the other samples are ignored. A blocked sample without its waker is drawn with the
# waker "[unknown waker]".
import os
import sys
import zlib
from collections import defaultdict

from offwake_stacks import (SEPARATOR, UNKNOWN_WAKER, ArgumentParser, WakerPairing, folded_comm,
                            add_only_options, frames_root_first, human, waker_frames, wakers_not_taken)

UNDER_PERF = "perf_trace_context" in sys.builtin_module_names

FRAME_HEIGHT = 16
FONT_SIZE = 11
CHAR_WIDTH = 6.6  # of FONT_SIZE monospace, to decide how much of a name fits
MARGIN = 10
TOP = 44  # room for the title and the detail line


def parse_args(argv):
    p = ArgumentParser(prog="offwake-flamegraph", description="off-wake flame graph as SVG")
    p.add_argument("-o", dest="output", default="offwake.svg", metavar="FILE")
    p.add_argument("--folded", metavar="FILE", help="read folded stacks ('-': stdin)")
    add_only_options(p)
    p.add_argument("--title", default="Off-wake time flame graph")
    p.add_argument("--width", type=int, default=1200, metavar="PX")
    p.add_argument("--min", type=int, default=0, metavar="NS")
    args = p.parse_args(argv)
    if args.width < 200:
        p.error("--width must be at least 200")
    if args.min < 0:
        p.error("--min must not be negative")
    if args.folded is not None and (args.kernel_only or args.user_only):
        p.error("--kernel-only and --user-only need samples, not --folded")
    if args.folded is None and not UNDER_PERF:
        p.error("outside perf script, give --folded FILE")
    return args


# --- Layout: folded stacks -> a tree of frames -> SVG ------------------------------------------

class Node:
    __slots__ = ("name", "ns", "children")

    def __init__(self, name):
        self.name = name
        self.ns = 0
        self.children = {}


def build_tree(folded):
    """folded: {tuple of frame names: ns}. Frames up to and with the first "--" are blocked."""
    root = Node("all")
    for frames, ns in folded.items():
        root.ns += ns
        node = root
        for name in frames:
            node = node.children.setdefault(name, Node(name))
            node.ns += ns
    return root


def depth_of(node):
    return 1 + max((depth_of(c) for c in node.children.values()), default=0)


def escape(text):
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def colour(name, part):
    """A stable colour per name, in the hue of its part: blocked, separator or waker."""
    if part == "separator":
        return "rgb(160,160,160)"
    h = zlib.crc32(name.encode("utf-8", "replace"))
    a, b = h & 0xFF, (h >> 8) & 0xFF
    if part == "blocked":
        return "rgb(%d,%d,%d)" % (60 + a % 50, 110 + b % 60, 220 + a % 35)
    if part == "waker":
        return "rgb(%d,%d,%d)" % (170 + a % 50, 90 + b % 50, 210 + b % 40)
    return "rgb(200,200,200)"  # the "all" frame


def render_svg(folded, title, width):
    root = build_tree(folded)
    depth = depth_of(root)
    height = TOP + depth * FRAME_HEIGHT + MARGIN
    scale = (width - 2 * MARGIN) / root.ns if root.ns else 0.0
    out = ['<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="monospace" font-size="%d">'
           % (width, height, width, height, FONT_SIZE),
           "<style>g.f:hover rect{stroke:black;stroke-width:1} text{pointer-events:none}</style>",
           '<rect x="0" y="0" width="%d" height="%d" fill="rgb(248,248,248)"/>' % (width, height),
           '<text x="%d" y="20" font-size="15" text-anchor="middle">%s</text>'
           % (width // 2, escape(title)),
           '<text x="%d" y="36" font-size="11">blocked stack at the bottom (blue), "%s", then the '
           'waker stack inverted above it (purple); total %s</text>'
           % (MARGIN, SEPARATOR, escape(human(root.ns)))]

    def draw(node, x, level, part, seps):
        w = node.ns * scale
        if w < 0.1:
            return
        y = height - MARGIN - (level + 1) * FRAME_HEIGHT
        share = 100.0 * node.ns / root.ns
        out.append('<g class="f"><title>%s (%s, %.2f%%)</title>'
                   '<rect x="%.2f" y="%d" width="%.2f" height="%d" rx="2" fill="%s"/>'
                   % (escape(node.name), human(node.ns), share, x, y, w, FRAME_HEIGHT - 1,
                      colour(node.name, part)))
        fits = int((w - 6) / CHAR_WIDTH)
        if fits >= 3:
            label = node.name if len(node.name) <= fits else node.name[:fits - 2] + ".."
            out.append('<text x="%.2f" y="%d">%s</text>' % (x + 3, y + FRAME_HEIGHT - 4,
                                                           escape(label)))
        out.append("</g>")
        child_x = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            # Stacks alternate above each separator: blocked, waker, blocked (a chain's hop), ...
            if child.name == SEPARATOR and part != "all":
                draw(child, child_x, level + 1, "separator", seps + 1)
            else:
                draw(child, child_x, level + 1, "waker" if seps % 2 else "blocked", seps)
            child_x += child.ns * scale

    draw(root, MARGIN, 0, "all", 0)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_svg(folded):
    folded = {k: v for k, v in folded.items() if v >= args.min and v > 0}
    svg = render_svg(folded, args.title, args.width)
    # As perf offwake's own outputs: a new 0600 file, complete before it takes the name.
    tmp = "%s.tmp.%d" % (args.output, os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(svg)
        os.replace(tmp, args.output)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        sys.stderr.write("offwake-flamegraph: writing %s: %s\n" % (args.output, e.strerror))
        sys.exit(1)
    sys.stderr.write("offwake-flamegraph: wrote %s (%d stacks, %s)\n"
                     % (args.output, len(folded), human(sum(folded.values()))))


def read_folded(path):
    folded = defaultdict(int)
    try:
        f = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        sys.stderr.write("offwake-flamegraph: reading %s: %s\n" % (path, e.strerror))
        sys.exit(1)
    with f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                sys.stderr.write("offwake-flamegraph: %s:%d: not a folded stack\n" % (path, number))
                sys.exit(1)
            folded[tuple(stack.split(";"))] += int(count)
    return folded


# --- Samples from perf script --------------------------------------------------------------------

def frames(callchain):
    return tuple(frames_root_first(callchain, args.kernel_only, args.user_only))


samples = defaultdict(int)


def blocked_of(param_dict):
    """(comm and the frames root first, period, wakers_not_taken)"""
    return ((folded_comm(param_dict.get("comm")),) + frames(param_dict.get("callchain")),
            param_dict.get("sample", {}).get("period", 0), wakers_not_taken(param_dict))


def add(blocked, waker, hops):
    stack, period, not_taken = blocked
    stack += (SEPARATOR,)
    if waker is None:
        samples[stack + (UNKNOWN_WAKER,)] += period
        return
    stack += tuple(waker_frames(frames(waker.get("callchain"))[::-1], not_taken, 1))
    last = folded_comm(waker.get("comm"))
    for hop, (hop_blocked, hop_waker) in enumerate(hops, 2):
        stack += (SEPARATOR,) + frames(hop_blocked.get("callchain")) + (SEPARATOR,)
        if hop_waker is None:
            last = UNKNOWN_WAKER
            break
        stack += tuple(waker_frames(frames(hop_waker.get("callchain"))[::-1], not_taken, hop))
        last = folded_comm(hop_waker.get("comm"))
    samples[stack + (last,)] += period


pairing = WakerPairing(blocked_of, add)


def process_event(param_dict):
    pairing.process_event(param_dict)


def trace_end():
    pairing.end()
    write_svg(samples)


args = parse_args(sys.argv[1:])
if args.folded is not None:
    write_svg(read_folded(args.folded))
    if UNDER_PERF:
        sys.exit(0)
