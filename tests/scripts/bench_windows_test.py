"""scripts/bench_windows.py: TPS traced over untraced from the windows of one pgbench run.
Run by BenchWindows.ArithmeticHolds (bench_windows_test.cpp), or: python3 -m unittest from
scripts/ with this file's directory on PYTHONPATH."""

import math
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import bench_windows as bw  # noqa: E402

T0 = 1764790000.0


def progress(reports):
    """pgbench -P 1 --progress-timestamp's lines for [(seconds after T0, tps)]."""
    return "".join(f"progress: {T0 + t:.3f} s, {tps:.1f} tps, lat 3.4 ms stddev 1.2, 0 failed\n"
                   for t, tps in reports)


def timeline(seconds, tps_at):
    """A report at the end of every second up to `seconds`, with tps_at(start of that second)."""
    return [(s + 1, tps_at(s)) for s in range(seconds)]


class ParseProgress(unittest.TestCase):
    def test_each_report_covers_the_time_since_the_one_before(self):
        text = "starting vacuum...end.\n" + progress([(1.0, 2000), (2.002, 2100.5), (3.0, 1900)])
        spans = bw.parse_progress(text)
        self.assertEqual(len(spans), 3)
        self.assertAlmostEqual(spans[0][0], T0)  # the first: one second before it
        self.assertAlmostEqual(spans[1][0], T0 + 1.0)
        self.assertAlmostEqual(spans[1][1], T0 + 2.002)
        self.assertEqual([s[2] for s in spans], [2000.0, 2100.5, 1900.0])

    def test_other_lines_are_ignored(self):
        self.assertEqual(bw.parse_progress("pgbench (15.18)\ntransaction type: <builtin: TPC-B>\n"), [])


class Windows(unittest.TestCase):
    def test_only_whole_seconds_inside_count(self):
        spans = bw.parse_progress(progress([(1, 1000), (2, 5000), (3, 2000), (4, 3000), (5, 9000)]))
        # [1.5, 4.2]: the seconds 2-3 and 3-4 lie inside; 1-2 and 4-5 only in part.
        self.assertAlmostEqual(bw.window_tps(spans, T0 + 1.5, T0 + 4.2), 2500.0)
        self.assertIsNone(bw.window_tps(spans, T0 + 1.5, T0 + 2.2))

    def test_a_drift_cancels_and_the_tracers_cost_is_found(self):
        # TPS climbs from 1,800 to 2,700 over the run, a drift larger than the effect. The
        # tracer costs 4% while attached, and the seconds in which it starts or stops (7-8,
        # 9-10, ...) drop to a third. Every window finds 0.96: against the untraced window
        # before it alone, it would find about 0.91.
        untraced = [(T0 + 1, T0 + 7), (T0 + 10, T0 + 16), (T0 + 19, T0 + 25), (T0 + 28, T0 + 34)]
        traced = [(T0 + 7.6, T0 + 9.4), (T0 + 16.6, T0 + 18.4), (T0 + 25.6, T0 + 27.4)]

        def tps(s):
            base = 1800 + 900 * s / 34
            if s in (8, 17, 26):
                return base * 0.96  # wholly traced
            if s in (7, 9, 16, 18, 25, 27):
                return base / 3  # a tracer starting or stopping
            return base

        spans = bw.parse_progress(progress(timeline(34, tps)))
        ratios = bw.cycle_ratios(spans, untraced, traced)
        self.assertEqual([i for _, _, _, i in ratios], [0, 1, 2])
        for r, t, u, _ in ratios:
            self.assertAlmostEqual(r, 0.96, delta=0.002)
            self.assertAlmostEqual(t / u, r)
        med, lo, hi = bw.summary(ratios)
        self.assertAlmostEqual(med, 0.96, delta=0.002)
        self.assertLessEqual(lo, med)
        self.assertLessEqual(med, hi)

    def test_a_window_without_a_whole_second_is_left_out(self):
        spans = bw.parse_progress(progress(timeline(10, lambda s: 2000)))
        untraced = [(T0 + 0, T0 + 3), (T0 + 6, T0 + 10)]
        self.assertEqual(bw.cycle_ratios(spans, untraced, [(T0 + 3.2, T0 + 4.1)]), [])
        self.assertIsNone(bw.summary([]))
        # The next window still names itself: its BPF time is read by that index.
        spans = bw.parse_progress(progress(timeline(16, lambda s: 2000)))
        untraced = [(T0 + 0, T0 + 3), (T0 + 6, T0 + 9), (T0 + 12, T0 + 16)]
        ratios = bw.cycle_ratios(spans, untraced, [(T0 + 3.2, T0 + 4.1), (T0 + 9, T0 + 12)])
        self.assertEqual([(round(r, 3), i) for r, _, _, i in ratios], [(1.0, 1)])

    def test_windows_must_alternate(self):
        with self.assertRaises(ValueError):
            bw.cycle_ratios([], [(T0, T0 + 1)], [(T0 + 2, T0 + 3)])


class MedianInterval(unittest.TestCase):
    def test_coverage_is_the_sign_tests(self):
        # Six values: min-max covers 1 - 2/64; five: 1 - 2/32, short of 95%.
        lo, hi, cover = bw.median_interval([0.93, 0.88, 0.97, 0.91, 0.90, 0.95])
        self.assertEqual((lo, hi), (0.88, 0.97))
        self.assertAlmostEqual(cover, 1 - 2 / 64)
        self.assertIsNone(bw.median_interval([0.93, 0.88, 0.97, 0.91, 0.90]))
        self.assertIsNone(bw.median_interval([]))
        # Ten values: the 2nd smallest to the 2nd largest, 1 - 2 * 11/1024 (the 3rd would cover 89%).
        x = [0.80 + 0.01 * i for i in range(10)]
        lo, hi, cover = bw.median_interval(list(reversed(x)))
        self.assertEqual((lo, hi), (x[1], x[8]))
        self.assertAlmostEqual(cover, 1 - 2 * 11 / 1024)
        # A lower level allows a narrower interval: 1 - 2 * 56/1024 = 89%.
        lo, hi, cover = bw.median_interval(x, level=0.85)
        self.assertEqual((lo, hi), (x[2], x[7]))
        self.assertAlmostEqual(cover, 1 - 2 * 56 / 1024)

    def test_it_covers_the_median_as_often_as_it_says(self):
        # 2,000 sittings of 6 and of 10 windows drawn from a skewed distribution whose median is
        # known: the interval holds it at least as often as its coverage says, within chance.
        rng = random.Random(7)
        median = math.log(2) / 8.0  # of an exponential with rate 8
        for n in (6, 10):
            held, cover = 0, None
            for _ in range(2000):
                lo, hi, cover = bw.median_interval([rng.expovariate(8.0) for _ in range(n)])
                held += lo <= median <= hi
            self.assertGreaterEqual(held / 2000, cover - 0.015, (n, held, cover))


if __name__ == "__main__":
    unittest.main()
