"""Throughput, TTFT, TPOT and inter-token gaps over time, drawn as one Text per frame.

Textual's stock Sparkline writes about 26 bytes per cell at 256 colours; one Text with a single
style per row writes a few bytes per cell (STYLE.md)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from ..formatting import count, ms
from .sim_view import SimView

LABEL_WIDTH = 6
VALUE_WIDTH = 9


def spark_cells(series, width: int, levels: tuple[str, ...], zero_is_missing: bool = False) -> str:
    """The last `width` values of `series` as level glyphs, scaled from 0 to their maximum.
    Fewer values than cells leaves the left side blank; so does a zero when `zero_is_missing`
    (a latency of 0 means nothing was measured in that window, not an instant answer)."""
    values = list(series)[-width:] if width > 0 else []
    if not values:
        return " " * max(width, 0)
    top = max(values)
    last = len(levels) - 1

    def cell(v: float) -> str:
        if zero_is_missing and v <= 0:
            return " "
        return levels[min(last, max(0, round(v / top * last)))] if top > 0 else levels[0]

    return " " * (width - len(values)) + "".join(cell(v) for v in values)


class SparklinesView(SimView):
    """One row per series: its name, the recent history, its latest value."""

    view_name = "sparklines"
    LINES = 4
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"sparklines--label", "sparklines--throughput", "sparklines--ttft",
                         "sparklines--tpot", "sparklines--itl", "sparklines--dim"}

    ROWS = (
        # label, snapshot series, style, format, whether a zero means "nothing measured"
        ("tok/s", "series_throughput", "sparklines--throughput", count, False),
        ("TTFT", "series_ttft", "sparklines--ttft", ms, True),
        ("TPOT", "series_tpot", "sparklines--tpot", ms, True),
        ("gap", "series_itl", "sparklines--itl", ms, True),
    )

    def build(self, width: int) -> Text:
        snap = self.snapshot
        text = Text()
        if snap is None:
            text.append("history: waiting for the first iteration", self.style_of("sparklines--dim"))
            return text
        cells = max(1, width - LABEL_WIDTH - VALUE_WIDTH)
        first = True
        for label, attribute, style, shown, zero_is_missing in self.ROWS:
            series = getattr(snap, attribute, ())
            if not first:
                text.append("\n")
            first = False
            text.append(f"{label:<{LABEL_WIDTH}}", self.style_of("sparklines--label"))
            text.append(spark_cells(series, cells, self.glyphs.spark, zero_is_missing), self.style_of(style))
            latest = shown(series[-1]) if series and (series[-1] > 0 or not zero_is_missing) else "-"
            text.append(f"{latest:>{VALUE_WIDTH}}")
        return text
