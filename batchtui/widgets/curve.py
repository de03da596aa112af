"""Throughput against latency over a sweep: the knee marked, the live load on it, and for a rate
sweep the rates with no steady state, the saturated rate and a latency objective."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Sequence

from rich.text import Text

from ..formatting import count, ms, number
from .sim_view import SimView

if TYPE_CHECKING:
    from sim.curves import Knee

    from ..simulation import SweepResult

PLOT_ROWS = 6


class CurvePoint(NamedTuple):
    """One point of a sweep: the load, and what it delivered."""

    load: float
    """Requests per second offered (a rate sweep) or the batch size (a batch sweep)."""
    tokens_per_s: float
    latency: float
    """Seconds; which latency (time per token, TTFT p99...) is the panel's `latency_label`."""
    bounded: bool = True
    """False when the queue grows without bound at this rate: `latency` is then no steady value
    and is not drawn."""


class CurvePanel(NamedTuple):
    """One sweep drawn as one small plot."""

    points: tuple[CurvePoint, ...]
    latency_label: str
    latency_attribute: str
    """Which live metric (a `sim.reports.MetricsView` field) the marker reads."""
    load_label: str
    """"req/s" for a rate sweep (drawn against the rate), "batch" for a batch sweep (drawn
    against tokens/s)."""
    knee: Knee
    saturated: float | None = None
    slo: float | None = None

    @property
    def by_rate(self) -> bool:
        return self.load_label != "batch"

    @property
    def load_range(self) -> str:
        lo, hi = number(self.points[0].load), number(self.points[-1].load)  # settings swept, as the dials read
        return f"batch {lo}-{hi}" if not self.by_rate else f"{lo}-{hi} {self.load_label}"

    def x(self, point: CurvePoint) -> float:
        return point.load if self.by_rate else point.tokens_per_s


def curve_panel(result: SweepResult) -> CurvePanel:
    """A sweep's points in load order, with its knee found by `sim.curves.find_knee` (the one
    knee every curve of the lessons and the command line uses)."""
    from sim.curves import find_knee  # numpy: imported when a curve is drawn, not at start-up

    bounded = result.bounded or (True,) * len(result.points)
    points = tuple(sorted((CurvePoint(*p, ok) for p, ok in zip(result.points, bounded)), key=lambda p: p.load))
    name = "TTFT" if result.load_label != "batch" else "time per token"
    knee = find_knee([p.load for p in points], [p.tokens_per_s for p in points],
                     [p.latency * 1000.0 for p in points], latency_name=name, bounded=[p.bounded for p in points])
    return CurvePanel(points, result.latency_label, result.latency_attribute, result.load_label, knee,
                      result.saturated, result.slo)


class CurveView(SimView):
    """Small plots, one per sweep (a batch sweep, a rate sweep), one under the other: latency
    up; tokens/s across for a batch sweep, the request rate across for a rate sweep. The knee is
    marked; `update_curves(...)` sets the sweeps, `update_snapshot` moves the live marker."""

    view_name = "curve"
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"curve--title", "curve--point", "curve--knee", "curve--here",
                         "curve--axis", "curve--dim", "curve--unbounded", "curve--line"}

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.panels: tuple[CurvePanel, ...] = ()
        self.pending = False
        """A sweep is still being computed: say so instead of "no sweep"."""
        self.held_back: frozenset[str] = frozenset()
        """Panels (by load label: "batch", "req/s") that answer a prediction not made yet: drawn
        as their title and a line saying when they show."""

    def hold_back(self, load_labels) -> None:
        held = frozenset(load_labels)
        if held != self.held_back:
            self.held_back = held
            self.redraw()

    @property
    def points(self) -> tuple[CurvePoint, ...]:
        """The first curve's points."""
        return self.panels[0].points if self.panels else ()

    def update_curves(self, results: Sequence[SweepResult], pending: bool = False) -> None:
        """Draw these sweeps (`batchtui.simulation.SweepResult`), one plot under the other.
        `pending`: more are on their way (a worker is computing them)."""
        self.panels = tuple(curve_panel(r) for r in results if r.points)
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
            if panel.load_label in self.held_back:
                text.append(f"{panel.load_range}: {panel.latency_label}", self.style_of("curve--title"))
                # Held until the answer is out: a wrong guess's result does not show it.
                text.append("\n(shows with the answer)", self.style_of("curve--dim"))
                continue
            self._build_panel(text, panel, width, rows)
        if self.pending:
            text.append("\n\n")
            text.append("rate sweep: running...", self.style_of("curve--dim"))
        return text

    def _here(self, panel: CurvePanel) -> tuple[float, float] | None:
        """Where the live run is on this panel's axes, if it has finished requests to say."""
        if self.snapshot is None or not self.snapshot.metrics.completed:
            return None
        m = self.snapshot.metrics
        x = m.requests_per_s if panel.by_rate else m.output_tokens_per_s
        return x, getattr(m, panel.latency_attribute, 0.0)

    def _build_panel(self, text: Text, panel: CurvePanel, width: int, rows: int) -> None:
        g = self.glyphs
        points = panel.points
        steady = [p for p in points if p.bounded]
        across = "req/s" if panel.by_rate else "tok/s"
        title = (f"{panel.latency_label} vs {across}" if panel.by_rate
                 else f"{panel.load_range}: {panel.latency_label} vs {across}")
        text.append(title, self.style_of("curve--title"))
        legend = f"  {g.knee} knee {g.here} now"
        if len(title) + len(legend) <= width:
            text.append(legend, self.style_of("curve--dim"))
        knee = panel.knee.index
        here = self._here(panel)

        # Axes from the steady points, the saturated rate and the SLO. A rate sweep keeps its top
        # row above the scale, for what has no steady value (rates past saturation) or is off it
        # (the live run's TTFT once the queue grows).
        x_max = max([panel.x(p) for p in points] + [panel.saturated or 0.0]
                    + ([here[0]] if here and not panel.by_rate else [])) or 1.0
        y_max = max([p.latency for p in steady] + [panel.slo or 0.0]
                    + ([here[1]] if here and not panel.by_rate else [])) or 1.0
        top = 1 if panel.by_rate else 0
        scale = rows - top
        slo = panel.slo
        above_slo = bool(slo) and scale > 2 and any(p.latency > slo for p in steady)
        if above_slo:
            # A point above the SLO is drawn above its line: the line is put a row below the
            # top at least. (Step 16 at 64 seats drew 565 ms on the 500 ms line, labelled
            # "565 ms", the point the SLO rate stops before looking inside it.)
            y_max = max(y_max, slo * (scale - 1) / (scale - 2))
        y_label = ms(y_max)
        axis = len(y_label) + 1
        plot_w = max(4, width - axis)
        grid = [[(" ", "")] * plot_w for _ in range(rows)]

        def col(x: float) -> int:
            return min(plot_w - 1, max(0, round(x / x_max * (plot_w - 1))))

        def at(y: float) -> int:
            if not math.isfinite(y) or y > y_max * (1 + 0.5 / scale):
                return 0
            return rows - 1 - min(scale - 1, max(0, round(y / y_max * (scale - 1))))

        slo_row = at(slo) if slo else None

        def row(y: float) -> int:
            """The row of a latency; on the SLO's side of its line, whatever the rounding."""
            r = at(y)
            if slo_row is None or r == 0:
                return r
            return min(r, slo_row - 1) if above_slo and y > slo else max(r, slo_row) if y <= slo else r

        # Lines first (SLO across, saturated rate up), then the segments between steady points,
        # then the points, the unbounded arrows, the knee and the live marker on top.
        if slo_row is not None:
            grid[slo_row] = [(g.line_h, "curve--line")] * plot_w
        if panel.saturated and panel.by_rate:
            c = col(panel.saturated)
            for r in range(rows):
                grid[r][c] = (g.line_v, "curve--line")
        for a, b in zip(steady, steady[1:]):
            ca, cb = col(panel.x(a)), col(panel.x(b))
            for s in range(1, max(abs(cb - ca), 1)):
                f = s / abs(cb - ca)
                grid[row(a.latency + f * (b.latency - a.latency))][ca + s] = (g.dot, "curve--dim")
        for p in points:
            if p.bounded:
                grid[row(p.latency)][col(panel.x(p))] = (g.point, "curve--point")
            else:
                grid[0][col(panel.x(p))] = (g.unbounded, "curve--unbounded")
        if knee is not None:
            k = points[knee]
            grid[row(k.latency)][col(panel.x(k))] = (g.knee, "curve--knee")
        if here is not None:
            grid[row(here[1])][col(here[0])] = (g.here, "curve--here")

        for i, cells in enumerate(grid):
            text.append("\n")
            text.append(f"{y_label if i == top else '':>{axis - 1}}", self.style_of("curve--axis"))
            text.append(g.axis_v, self.style_of("curve--axis"))
            self.append_runs(text, ((glyph, self.style_of(style) if style else "") for glyph, style in cells))
        # The x axis, its far end labelled on the line itself: "0 └──────── 16k tok/s".
        right = f" {count(x_max)} {across}"
        line = max(0, plot_w - len(right))
        text.append("\n")
        text.append(f"{'0':>{axis - 1}}" + g.axis_corner + g.axis_h * line + right, self.style_of("curve--axis"))
        self._notes(text, panel, width)

    def _notes(self, text: Text, panel: CurvePanel, width: int) -> None:
        """The knee in words, then what the marks of a rate sweep mean."""
        g = self.glyphs
        if panel.knee.index is not None:
            k = panel.points[panel.knee.index]
            # A rate as the saturated rate below it reads (a measured figure's digits); a batch whole.
            load = f"{count(k.load)} {panel.load_label}" if panel.by_rate else f"batch {count(int(k.load))}"
            full = f" knee: {load}, {count(k.tokens_per_s)} tok/s, {ms(k.latency)}"
            short = f" knee: {load}, {ms(k.latency)}"
            text.append("\n")
            text.append(g.knee, self.style_of("curve--knee"))
            text.append(full if len(full) + 1 <= width else short)
        elif panel.knee.reason == "unbounded":
            text.append("\n")
            text.append(g.unbounded, self.style_of("curve--unbounded"))
            text.append(" no steady point: every rate is past saturation"[:max(0, width - 1)])
        else:
            text.append("\n")
            text.append(g.knee, self.style_of("curve--knee"))
            text.append(" no knee yet: the sweep stops before it"[:max(0, width - 1)])
        if not panel.by_rate:
            return
        notes = []
        if not all(p.bounded for p in panel.points):
            notes.append((g.unbounded, "curve--unbounded", " queue grows without bound"))
        if panel.saturated:
            notes.append((g.line_v, "curve--line", f" saturated {count(panel.saturated)} req/s"))
        if panel.slo:
            notes.append((g.line_h, "curve--line", f" SLO {ms(panel.slo)}"))
        used = width  # start a new line before the first note
        for glyph, style, words in notes:
            piece = len(glyph) + len(words)
            if used + 2 + piece > width:
                text.append("\n")
                used = 0
            elif used:
                text.append("  ")
                used += 2
            text.append(glyph, self.style_of(style))
            text.append(words[: max(0, width - used - len(glyph))])
            used += piece
