"""TPS traced over untraced from windows of one pgbench run (scripts/bench-overhead.py, issue 24).

On a virtual machine pgbench's TPS moves by 10 to 20% from one 8-second run to the next (the
untraced runs of one sitting ranged from 1,822 to 2,616 TPS), more than the few percent a tracer
costs; from one second to the next it moves by a few percent, and slowly. So each tracer is also
measured within one long pgbench run that reports its TPS every second (-P 1
--progress-timestamp): attached for a window of seconds, detached for the next, in turn. Each
traced window is compared with the untraced windows on either side of it, which cancels a drift
that is slow next to a window. Only the seconds that lie wholly inside a window count: not those
in which a tracer loaded, attached, stopped or wrote its file.

This module holds the arithmetic, without processes, so that it can be tested on its own
(tests/scripts/bench_windows_test.py).
"""

import math
import re
import statistics

# pgbench -P 1 --progress-timestamp: "progress: 1764794650.123 s, 2345.6 tps, lat 3.4 ms stddev ..."
PROGRESS = re.compile(r"^progress: (\d+(?:\.\d+)?) s, (\d+(?:\.\d+)?) tps", re.M)


def parse_progress(text):
    """[(start, end, tps)]: each progress report of pgbench -P 1 --progress-timestamp covers the
    time from the report before it (or, for the first, one second) to its own timestamp, in Unix
    seconds."""
    reports = [(float(t), float(tps)) for t, tps in PROGRESS.findall(text)]
    spans = []
    for i, (end, tps) in enumerate(reports):
        start = reports[i - 1][0] if i else end - 1.0
        if end > start:
            spans.append((start, end, tps))
    return spans


def window_tps(spans, start, end):
    """Mean TPS of the reports that lie wholly in [start, end], weighted by their length; None if
    none does."""
    inside = [(e - s, tps) for s, e, tps in spans if s >= start and e <= end]
    length = sum(d for d, _ in inside)
    return sum(d * tps for d, tps in inside) / length if length > 0 else None


def cycle_ratios(spans, untraced, traced):
    """One (ratio, traced TPS, untraced TPS, i) per traced window traced[i] whose TPS, and that of
    at least one untraced window next to it, is known: traced[i] lies between untraced[i] and
    untraced[i + 1] (windows are (start, end) in Unix seconds), and its untraced TPS is the mean
    of theirs. Windows without are left out: i names the window each ratio is of."""
    if len(untraced) != len(traced) + 1:
        raise ValueError("one untraced window before each traced window, and one after the last")
    out = []
    for i, (start, end) in enumerate(traced):
        t = window_tps(spans, start, end)
        around = [u for u in (window_tps(spans, *untraced[i]), window_tps(spans, *untraced[i + 1])) if u is not None]
        if t is None or not around:
            continue
        u = sum(around) / len(around)
        if u > 0:
            out.append((t / u, t, u, i))
    return out


def summary(ratios):
    """(median ratio, min, max) of cycle_ratios(); None if there are none."""
    if not ratios:
        return None
    r = [x[0] for x in ratios]
    return statistics.median(r), min(r), max(r)


def median_interval(values, level=0.95):
    """(low, high, coverage): a distribution-free confidence interval for the median of what
    `values` are drawn from (the sign test's): the k-th smallest and k-th largest value, with the
    largest k whose coverage, 1 - 2 P(Binomial(n, 1/2) < k), is at least `level`. None when even
    min-max falls short: below 6 values at 0.95 (min-max of 6 covers 96.9%, of 5 only 93.8%)."""
    x = sorted(values)
    n = len(x)
    k, below, cover = 0, 0.0, None  # cover: the coverage of the k accepted so far
    while k < n // 2:
        below += math.comb(n, k) / 2 ** n  # P(Binomial(n, 1/2) < k + 1)
        if 1 - 2 * below < level:
            break
        k, cover = k + 1, 1 - 2 * below
    if k == 0:
        return None
    return x[k - 1], x[n - k], cover
