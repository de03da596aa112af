"""Throughput against latency over a sweep, with the knee marked and the live load on it."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Sequence

from rich.text import Text

from ..formatting import count, ms
from .sim_view import SimView

PLOT_ROWS = 6


class CurvePoint(NamedTuple):
    """One run of a sweep: offered load, and what it delivered."""

    rate: float
    """Requests per second offered (or the batch size, for a batch sweep)."""
    tokens_per_s: float
    latency: float
    """Seconds; which latency (TPOT p50, TTFT p99...) is the curve's `latency_label`."""


def find_knee(points: Sequence[CurvePoint]) -> int | None:
    """Index of the knee: after scaling both axes to [0, 1], the point farthest below the chord
    from the first point to the last. Latency grows slowly and then steeply; the knee is where."""
    if len(points) < 3:
        return None
    xs = [p.tokens_per_s for p in points]
    ys = [p.latency for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    if x1 <= x0 or y1 <= y0:
        return None
    nx = [(x - x0) / (x1 - x0) for x in xs]
    ny = [(y - y0) / (y1 - y0) for y in ys]
    ax, ay, bx, by = nx[0], ny[0], nx[-1], ny[-1]
    # Signed distance to the chord; positive means below it (the slow-rising part).
    best, best_distance = None, 0.0
    for i in range(1, len(points) - 1):
        distance = (by - ay) * (nx[i] - ax) - (bx - ax) * (ny[i] - ay)
        if distance > best_distance:
            best, best_distance = i, distance
    return best


class CurvePanel(NamedTuple):
    """One sweep drawn as one small plot."""

    points: tuple[CurvePoint, ...]
    latency_label: str = "TPOT p50"
    latency_attribute: str = "tpot_p50"
    """Which live metric (a `sim.reports.MetricsView` field) the marker reads."""
    load_label: str = "req/s"
    """How the load of a point is named: "req/s" for a rate sweep, "batch" for a batch sweep."""

    @property
    def load_range(self) -> str:
        lo, hi = count(self.points[0].rate), count(self.points[-1].rate)
        return f"batch {lo}-{hi}" if self.load_label == "batch" else f"{lo}-{hi} {self.load_label}"


def _panel(points, latency_label=None, latency_attribute=None, load_label=None) -> CurvePanel:
    ordered = tuple(sorted((CurvePoint(*p) for p in points), key=lambda p: p.rate))
    defaults = CurvePanel(())
    return CurvePanel(ordered, latency_label or defaults.latency_label,
                      latency_attribute or defaults.latency_attribute, load_label or defaults.load_label)


class CurveView(SimView):
    """Small scatters, one per sweep (a batch sweep, a rate sweep): tokens/s across, latency up,
    the knee marked. `update_curves(...)` sets the sweeps; `update_snapshot` moves the marker of
    the live simulation on each."""

    view_name = "curve"
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"curve--title", "curve--point", "curve--knee", "curve--here",
                         "curve--axis", "curve--dim"}

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.panels: tuple[CurvePanel, ...] = ()
        self.pending = False
        """A sweep is still being computed: say so instead of "no sweep"."""

    @property
    def points(self) -> tuple[CurvePoint, ...]:
        """The first curve's points."""
        return self.panels[0].points if self.panels else ()

    def update_curve(self, points: Sequence[tuple[float, float, float]],
                     latency_label: str | None = None, latency_attribute: str | None = None,
                     load_label: str | None = None) -> None:
        """Draw one sweep: (rate or batch, tokens/s, latency in seconds) per point."""
        self.update_curves([(points, latency_label, latency_attribute, load_label)] if points else [])

    def update_curves(self, sweeps, pending: bool = False) -> None:
        """Draw several sweeps, each (points, latency_label, latency_attribute, load_label), one
        plot under the other. `pending`: more are on their way (a worker is computing them)."""
        self.panels = tuple(_panel(*sweep) for sweep in sweeps if sweep[0])
        self.pending = pending
        self.redraw()

    def build(self, width: int) -> Text:
        text = Text()
        if not self.panels:
            text.append("throughput against latency", self.style_of("curve--title"))
            words = "sweeping... (a few tenths of a second)" if self.pending else "no sweep for this step"
            text.append("\n" + words, self.style_of("curve--dim"))
            return text
        rows = PLOT_ROWS if len(self.panels) == 1 and not self.pending else PLOT_ROWS - 1
        for i, panel in enumerate(self.panels):
            if i:
                text.append("\n\n")
            self._build_panel(text, panel, width, rows)
        if self.pending:
            text.append("\n\n")
            text.append("rate sweep: running...", self.style_of("curve--dim"))
        return text

    def _build_panel(self, text: Text, panel: CurvePanel, width: int, rows: int) -> None:
        g = self.glyphs
        points = panel.points
        title = f"{panel.load_range}: {panel.latency_label} vs tok/s"
        text.append(title, self.style_of("curve--title"))
        legend = f"  {g.knee} knee {g.here} now"
        if len(title) + len(legend) <= width:
            text.append(legend, self.style_of("curve--dim"))
        knee = find_knee(points)
        here = None
        if self.snapshot is not None and self.snapshot.metrics.completed:
            m = self.snapshot.metrics
            here = (m.output_tokens_per_s, getattr(m, panel.latency_attribute, 0.0))

        x_max = max([p.tokens_per_s for p in points] + ([here[0]] if here else [])) or 1.0
        y_max = max([p.latency for p in points] + ([here[1]] if here else [])) or 1.0
        y_label = ms(y_max)
        axis = len(y_label) + 1
        plot_w = max(4, width - axis)

        grid = [[(" ", "")] * plot_w for _ in range(rows)]

        def place(x: float, y: float) -> tuple[int, int]:
            col = min(plot_w - 1, max(0, round(x / x_max * (plot_w - 1))))
            row = min(rows - 1, max(0, round(y / y_max * (rows - 1))))
            return rows - 1 - row, col

        # Dots along the segments first, then points on top, then the knee and the live marker.
        for a, b in zip(points, points[1:]):
            steps = max(abs(place(b.tokens_per_s, b.latency)[1] - place(a.tokens_per_s, a.latency)[1]), 1)
            for s in range(1, steps):
                f = s / steps
                r, c = place(a.tokens_per_s + f * (b.tokens_per_s - a.tokens_per_s),
                             a.latency + f * (b.latency - a.latency))
                grid[r][c] = (g.dot, "curve--dim")
        for p in points:
            r, c = place(p.tokens_per_s, p.latency)
            grid[r][c] = (g.point, "curve--point")
        if knee is not None:
            r, c = place(points[knee].tokens_per_s, points[knee].latency)
            grid[r][c] = (g.knee, "curve--knee")
        if here is not None:
            r, c = place(*here)
            grid[r][c] = (g.here, "curve--here")

        for i, row in enumerate(grid):
            text.append("\n")
            text.append(f"{y_label if i == 0 else '':>{axis - 1}}", self.style_of("curve--axis"))
            text.append(g.axis_v, self.style_of("curve--axis"))
            self.append_runs(text, ((glyph, self.style_of(style) if style else "") for glyph, style in row))
        # The x axis, its far end labelled on the line itself: "0 └──────── 16k tok/s".
        right = f" {count(x_max)} tok/s"
        line = max(0, plot_w - len(right))
        text.append("\n")
        text.append(f"{'0':>{axis - 1}}" + g.axis_corner + g.axis_h * line + right, self.style_of("curve--axis"))
        if knee is not None:
            k = points[knee]
            load = f"batch {count(k.rate)}" if panel.load_label == "batch" else f"{count(k.rate)} {panel.load_label}"
            full = f" knee: {load}, {count(k.tokens_per_s)} tok/s, {ms(k.latency)}"
            short = f" knee: {load}, {ms(k.latency)}"
            text.append("\n")
            text.append(g.knee, self.style_of("curve--knee"))
            text.append(full if len(full) + 1 <= width else short)
