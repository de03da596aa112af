"""Throughput, TTFT, TPOT and inter-token gaps over time, drawn as one Text per frame.

Textual's stock Sparkline writes about 26 bytes per cell at 256 colours; one Text with a single
style per row writes a few bytes per cell (STYLE.md)."""

from __future__ import annotations

import math
from pathlib import Path

from rich.text import Text

from ..formatting import count, latency, worst_gap
from .sim_view import SimView

LABEL_WIDTH = 6
VALUE_WIDTH = 9


MIN_LOG_SPAN = 4.0
"""A latency row spans at least this factor top to bottom: steady latencies draw a flat line
across the middle, not a solid block, and a climb of ten or a thousand times still fits."""


def spark_cells(series, width: int, levels: tuple[str, ...], zero_is_missing: bool = False,
                log: bool = False, scale_of=None) -> str:
    """The last `width` values of `series` as level glyphs. Linear from 0 to their maximum, or
    with `log` from their smallest to their largest on a log scale (at least MIN_LOG_SPAN apart,
    centred on the values), so a latency's climb shows whatever its size. Fewer values than
    cells leaves the left side blank; so does a zero when `zero_is_missing` (a latency of 0 means
    nothing was measured in that window, not an instant answer). `scale_of`: the values the
    scale spans, when rows are read against each other (a measured row under a simulated one);
    by default this row's own."""
    values = list(series)[-width:] if width > 0 else []
    if not values:
        return " " * max(width, 0)
    scaled = values if scale_of is None else [v for v in scale_of if math.isfinite(v)] or values
    last = len(levels) - 1
    if log:
        positive = [v for v in scaled if v > 0]
        if not positive:
            return " " * (width - len(values)) + "".join(" " if zero_is_missing else levels[0] for _ in values)
        lo, hi = math.log(min(positive)), math.log(max(positive))
        span = math.log(MIN_LOG_SPAN)
        if hi - lo < span:
            middle = (hi + lo) / 2
            lo, hi = middle - span / 2, middle + span / 2

        def share(v: float) -> float:
            return (math.log(v) - lo) / (hi - lo)
    else:
        top = max(scaled)

        def share(v: float) -> float:
            return v / top if top > 0 else 0.0

    def cell(v: float) -> str:
        if v <= 0:
            return " " if zero_is_missing else levels[0]
        return levels[min(last, max(0, round(share(v) * last)))]

    return " " * (width - len(values)) + "".join(cell(v) for v in values)


class SparklinesView(SimView):
    """One row per series: its name, the recent history, and the metrics line's figure for it."""

    view_name = "sparklines"
    LINES = 4
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"sparklines--label", "sparklines--throughput", "sparklines--ttft",
                         "sparklines--tpot", "sparklines--itl", "sparklines--dim"}

    ROWS = (
        # label, snapshot series, style, the figure beside it, latency (a zero is "nothing
        # measured", and the scale is logarithmic so a climb shows whatever its size). The figure
        # is the metrics line's own (tokens/s over its 10 s window, p50 over recent requests, the
        # worst recent gap): one value per quantity on a screen, whichever views show it.
        ("tok/s", "series_throughput", "sparklines--throughput",
         lambda s: count(s.metrics.output_tokens_per_s), False),
        ("TTFT", "series_ttft", "sparklines--ttft", lambda s: latency(s, s.metrics.ttft_p50), True),
        ("TPOT", "series_tpot", "sparklines--tpot", lambda s: latency(s, s.metrics.tpot_p50), True),
        ("gap", "series_itl", "sparklines--itl", worst_gap, True),
    )

    def build(self, width: int) -> Text:
        snap = self.snapshot
        text = Text()
        if snap is None:
            text.append("history: waiting for the first iteration", self.style_of("sparklines--dim"))
            return text
        cells = max(1, width - LABEL_WIDTH - VALUE_WIDTH)
        first = True
        for label, attribute, style, figure, latency in self.ROWS:
            series = getattr(snap, attribute, ())
            if not first:
                text.append("\n")
            first = False
            if snap.encoder and attribute == "series_throughput":
                # An encoder makes one token a request: its history is of requests/s.
                label, figure = "req/s", lambda s: count(s.metrics.requests_per_s)
            text.append(f"{label:<{LABEL_WIDTH}}", self.style_of("sparklines--label"))
            text.append(spark_cells(series, cells, self.glyphs.spark, latency, log=latency), self.style_of(style))
            text.append(f"{figure(snap):>{VALUE_WIDTH}}")
        return text
