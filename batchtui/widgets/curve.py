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


class CurveView(SimView):
    """A small scatter: tokens/s across, latency up. `update_curve(points)` sets the sweep;
    `update_snapshot` moves the marker for the live simulation."""

    view_name = "curve"
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"curve--title", "curve--point", "curve--knee", "curve--here",
                         "curve--axis", "curve--dim"}

    latency_attribute = "tpot_p50"
    """Which MetricsView field the live marker reads, to match the sweep's latency."""
    latency_label = "TPOT p50"
    load_label = "req/s"
    """How the knee's load is named: "req/s" for a rate sweep, "batch" for a batch sweep."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.points: tuple[CurvePoint, ...] = ()

    def update_curve(self, points: Sequence[tuple[float, float, float]],
                     latency_label: str | None = None, latency_attribute: str | None = None,
                     load_label: str | None = None) -> None:
        """Set the sweep to draw: (rate or batch, tokens/s, latency in seconds) per point."""
        if load_label:
            self.load_label = load_label
        self.points = tuple(sorted((CurvePoint(*p) for p in points), key=lambda p: p.rate))
        if latency_label:
            self.latency_label = latency_label
        if latency_attribute:
            self.latency_attribute = latency_attribute
        self.redraw()

    def build(self, width: int) -> Text:
        text = Text()
        text.append(f"tokens/s vs {self.latency_label}", self.style_of("curve--title"))
        if not self.points:
            text.append("\nno sweep for this step", self.style_of("curve--dim"))
            return text
        g = self.glyphs
        knee = find_knee(self.points)
        here = None
        if self.snapshot is not None and self.snapshot.metrics.completed:
            m = self.snapshot.metrics
            here = (m.output_tokens_per_s, getattr(m, self.latency_attribute, 0.0))

        x_max = max([p.tokens_per_s for p in self.points] + ([here[0]] if here else [])) or 1.0
        y_max = max([p.latency for p in self.points] + ([here[1]] if here else [])) or 1.0
        y_label = ms(y_max)
        axis = len(y_label) + 1
        plot_w = max(4, width - axis)

        grid = [[(" ", "")] * plot_w for _ in range(PLOT_ROWS)]

        def place(x: float, y: float) -> tuple[int, int]:
            col = min(plot_w - 1, max(0, round(x / x_max * (plot_w - 1))))
            row = min(PLOT_ROWS - 1, max(0, round(y / y_max * (PLOT_ROWS - 1))))
            return PLOT_ROWS - 1 - row, col

        # Dots along the segments first, then points on top, then the knee and the live marker.
        for a, b in zip(self.points, self.points[1:]):
            steps = max(abs(place(b.tokens_per_s, b.latency)[1] - place(a.tokens_per_s, a.latency)[1]), 1)
            for s in range(1, steps):
                f = s / steps
                r, c = place(a.tokens_per_s + f * (b.tokens_per_s - a.tokens_per_s),
                             a.latency + f * (b.latency - a.latency))
                grid[r][c] = (g.dot, "curve--dim")
        for p in self.points:
            r, c = place(p.tokens_per_s, p.latency)
            grid[r][c] = (g.point, "curve--point")
        if knee is not None:
            r, c = place(self.points[knee].tokens_per_s, self.points[knee].latency)
            grid[r][c] = (g.knee, "curve--knee")
        if here is not None:
            r, c = place(*here)
            grid[r][c] = (g.here, "curve--here")

        for i, row in enumerate(grid):
            text.append("\n")
            text.append(f"{y_label if i == 0 else '':>{axis - 1}}", self.style_of("curve--axis"))
            text.append(g.axis_v, self.style_of("curve--axis"))
            self.append_runs(text, ((glyph, self.style_of(style) if style else "") for glyph, style in row))
        text.append("\n")
        text.append(" " * (axis - 1) + g.axis_corner + g.axis_h * plot_w, self.style_of("curve--axis"))
        right = f"{count(x_max)} tok/s"
        text.append("\n" + f"{'0':<{axis}}" + f"{right:>{max(0, plot_w)}}", self.style_of("curve--axis"))
        if knee is not None:
            k = self.points[knee]
            text.append("\n")
            text.append(g.knee, self.style_of("curve--knee"))
            load = f"batch {count(k.rate)}" if self.load_label == "batch" else f"{count(k.rate)} {self.load_label}"
            text.append(f" knee: {load}, {count(k.tokens_per_s)} tok/s, {ms(k.latency)}")
        return text
