"""Figures of a live run as the panes print them: times in ms (or s), counts and rates with k/M,
shares in per cent; short, fixed width, their digits kept ("8.00 ms", "11.0 ms").

One rule for every place a live run's figure is read: the app's views (`batchtui.formatting`
takes these) and a lesson's reading of the run (a prediction's reveal, step 18's table of
another server's runs), so one figure reads the same in a sentence and in the table beside it.
A lesson's own prose figures, computed for the step, are `steps.figures`' ("about 16 req/s").
"""

from __future__ import annotations

import math
from numbers import Integral

from sim.reports import recent_worst_gap


def ms(seconds: float) -> str:
    """A duration given in seconds, shown in ms (or s when long)."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    value = seconds * 1000
    if value >= 10_000:
        return f"{seconds:.1f} s"
    if value >= 999.5:  # "1.23 s" reads faster than "1234 ms"
        return f"{seconds:.2f} s"
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def count(value: float) -> str:
    """A count or rate with a k/M suffix once it gets long: 950, 7.8k, 12k, 1.2M.

    Its digits follow its size, never whether it happens to be whole: a measured figure (a
    float) below 100 keeps one decimal, so 16.0 req/s reads "16.0" beside "30.4" (it read "16"
    beside "30.4" in the same column); a count of things (an int) reads whole ("16" seats)."""
    if value is None or not math.isfinite(value):
        return "inf" if value == math.inf else "-"
    magnitude = abs(value)
    if magnitude >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if magnitude >= 10_000:
        return f"{value / 1000:.0f}k"
    if magnitude >= 1000:
        return f"{value / 1000:.1f}k"
    if magnitude >= 100 or isinstance(value, Integral) or value == 0:
        return f"{value:.0f}"
    return f"{value:.1f}"


def exact_count(n: int) -> str:
    """A count exact while short ("8,466"), then rounded ("12k"), so a metrics line fits 80 columns."""
    return f"{n:,}" if n < 10_000 else count(n)


def percent(share: float) -> str:
    return f"{share * 100:.0f}%" if share >= 0.1 or share == 0 else f"{share * 100:.1f}%"


def latency(snap, value: float) -> str:
    """A latency percentile of a run's snapshot as the views print it: a dash until a request
    has finished (the percentile reads 0 before that, which is no measurement)."""
    return ms(value) if snap.metrics.completed and value > 0 else "-"


def worst_gap(snap) -> str:
    """The recent worst gap between two tokens of a run's snapshot (`sim.reports.recent_worst_gap`),
    or a dash before there is one."""
    gap = recent_worst_gap(snap)
    return ms(gap) if gap > 0 else "-"
