"""A real server beside the simulated engine (the playground's `s`, `batchtui --server URL`):
throughput, TTFT and TPOT as two sparklines each, the simulated row over the measured one on one
scale, then running, waiting and KV use, each with the measured figure's gap to the simulated in
per cent.

It draws two sources of a frame: "main" (the simulated engine's `EngineSnapshot`) and "server"
(a `batchtui.loadgen.live.Measured`). The simulated figures are the metrics line's own (tokens/s
over its 10 s window, p50 over recent requests); the measured ones are taken the same way
(`loadgen.live`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text

from ..formatting import count, ms, percent
from .sim_view import SimView
from .sparklines import spark_cells

LABEL_WIDTH = 6
TAG_WIDTH = 5
VALUE_WIDTH = 8
GAP_WIDTH = 6


def gap_words(measured: float | None, simulated: float | None) -> str:
    """The measured figure's gap to the simulated one in per cent ("+3%", "-12%"); "" when either
    is unknown or the simulated is 0."""
    if measured is None or simulated is None or simulated <= 0:
        return ""
    gap = (measured - simulated) / simulated * 100
    return f"{gap:+.0f}%" if abs(gap) < 999.5 else (">+999%" if gap > 0 else "<-999%")


def _latency(snap, value: float) -> float | None:
    return value if snap.metrics.completed and value > 0 else None


def _kv_share(snap) -> float | None:
    return snap.kv_blocks_used / snap.kv_blocks_usable if snap.kv_blocks_usable else None


ROWS = (
    # label, series (the snapshot's and the measurement's, of one name), simulated figure,
    # measured figure, its words, latency (log scale, a zero is "nothing measured"), style
    ("tok/s", "series_throughput", lambda s: s.metrics.output_tokens_per_s, lambda m: m.tokens_per_s, count,
     False, "server--throughput"),
    ("TTFT", "series_ttft", lambda s: _latency(s, s.metrics.ttft_p50), lambda m: m.ttft_p50, ms, True,
     "server--ttft"),
    ("TPOT", "series_tpot", lambda s: _latency(s, s.metrics.tpot_p50), lambda m: m.tpot_p50, ms, True,
     "server--tpot"),
)
GAUGES = (
    # label, simulated, measured, words
    ("running", lambda s: s.running, lambda m: m.running, lambda v: f"{v:,.0f}"),
    ("waiting", lambda s: s.queue_len, lambda m: m.waiting, lambda v: f"{v:,.0f}"),
    ("KV use", _kv_share, lambda m: m.kv_usage, percent),
)


def _identity(text: str) -> str:
    return text


class ServerView(SimView):
    """Simulated over measured, on the same scales; see the module's doc."""

    view_name = "server"
    LINES = 1 + 2 * len(ROWS) + 1 + len(GAUGES)
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"server--label", "server--throughput", "server--ttft", "server--tpot", "server--dim",
                         "server--gone"}

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.measured = None
        """The last `loadgen.live.Measured` (None: nothing measured yet)."""
        self.status = ""
        """What the session is doing when nothing is measured yet ("connecting to ...")."""
        self.measured_face: Callable[[str], str] = _identity
        """How the measured figures, and the sparklines drawn on their scale, are written (a
        snapshot test masks them: they are the wall clock's, never the same twice)."""

    def update_frame(self, frames) -> None:
        measured = frames.get("server")
        changed = measured is not self.measured
        self.measured = measured
        snapshot = frames.get(self.source)
        if snapshot is not None:
            self.update_snapshot(snapshot)
        elif changed:
            self.redraw()

    def build(self, width: int) -> Text:
        snap, m = self.snapshot, self.measured
        face = self.measured_face
        text = Text()
        dim = self.style_of("server--dim")
        if m is None:
            text.append(self.status or "server: not connected", dim)
        elif m.gone:
            text.append(face(f"{m.server} went away: {m.gone}")[:width], self.style_of("server--gone"))
        else:
            text.append(face(f"vs {m.server} · t {m.time:.0f} s · {m.completed:,} done"
                             + (f" · {m.failed:,} failed" if m.failed else ""))[:width], dim)
        cells = max(1, width - LABEL_WIDTH - TAG_WIDTH - VALUE_WIDTH - GAP_WIDTH)
        spark = self.glyphs.spark
        for label, series, sim_of, real_of, words, latency, style in ROWS:
            ours = tuple(getattr(snap, series, ())) if snap is not None else ()
            theirs = tuple(getattr(m, series, ())) if m is not None else ()
            shared = ours[-cells:] + theirs[-cells:]
            sim_value = sim_of(snap) if snap is not None else None
            real_value = real_of(m) if m is not None else None
            text.append("\n")
            text.append(f"{label:<{LABEL_WIDTH}}", self.style_of("server--label"))
            text.append(f"{'sim':<{TAG_WIDTH}}", dim)
            drawn = spark_cells(ours, cells, spark, latency, log=latency, scale_of=shared)
            # (on the measured row's scale: what it looks like depends on the measured figures)
            text.append(face(drawn) if theirs else drawn, self.style_of(style))
            text.append(f"{words(sim_value) if sim_value is not None else '-':>{VALUE_WIDTH}}")
            text.append("\n" + " " * LABEL_WIDTH)
            text.append(f"{'real':<{TAG_WIDTH}}", dim)
            text.append(face(spark_cells(theirs, cells, spark, latency, log=latency, scale_of=shared)),
                        self.style_of(style))
            text.append(face(f"{words(real_value) if real_value is not None else '-':>{VALUE_WIDTH}}"))
            text.append(face(f"{gap_words(real_value, sim_value):>{GAP_WIDTH}}"))
        head = max(LABEL_WIDTH + 2, min(LABEL_WIDTH + TAG_WIDTH + 3, width - 2 * VALUE_WIDTH - GAP_WIDTH))
        text.append("\n")
        text.append(f"{'':<{head}}{'sim':>{VALUE_WIDTH}}{'real':>{VALUE_WIDTH}}{'gap':>{GAP_WIDTH}}", dim)
        for label, sim_of, real_of, words in GAUGES:
            sim_value = sim_of(snap) if snap is not None else None
            real_value = real_of(m) if m is not None else None
            text.append("\n")
            text.append(f"{label:<{head}}", self.style_of("server--label"))
            text.append(f"{words(sim_value) if sim_value is not None else '-':>{VALUE_WIDTH}}")
            text.append(face(f"{words(real_value) if real_value is not None else '-':>{VALUE_WIDTH}}"))
            text.append(face(f"{gap_words(real_value, sim_value):>{GAP_WIDTH}}"))
        return text
