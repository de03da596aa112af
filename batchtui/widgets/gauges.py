"""How hard the last iteration drove the GPU: memory bandwidth and tensor cores, as two gauges."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from ..formatting import percent
from .sim_view import SimView

LABEL_WIDTH = 17
VALUE_WIDTH = 6


def gauge_cells(share: float, width: int) -> int:
    """Filled cells for a share of 0..1 (rounded, so a share under half a cell shows none)."""
    return max(0, min(width, round(share * width)))


class GaugesView(SimView):
    """Two gauges for the last iteration: the share of memory bandwidth its reads used (HBM on
    most GPUs, GDDR6 on the L40S), and the share of the tensor cores' dense peak its arithmetic
    used. One request at a time reads every weight per token, so the first sits near 80 % while
    the second stays near zero."""

    view_name = "gauges"
    LINES = 2
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"gauges--label", "gauges--bandwidth", "gauges--tensor", "gauges--free",
                         "gauges--dim"}

    ROWS = (
        ("memory bandwidth", "bandwidth_share", "gauges--bandwidth"),
        ("tensor cores", "tensor_core_share", "gauges--tensor"),
    )

    def build(self, width: int) -> Text:
        snap = self.snapshot
        report = snap.last if snap is not None else None
        text = Text()
        if report is None:
            # Two lines, like the gauges: the view's height stays put when they appear.
            text.append("GPU gauges: none yet\n(press . to run one iteration)", self.style_of("gauges--dim"))
            return text
        g = self.glyphs
        bar = max(1, width - LABEL_WIDTH - VALUE_WIDTH)
        for i, (label, attribute, style) in enumerate(self.ROWS):
            share = max(0.0, getattr(report.cost, attribute, 0.0))
            filled = gauge_cells(share, bar)
            if i:
                text.append("\n")
            text.append(f"{label:<{LABEL_WIDTH}}", self.style_of("gauges--label"))
            text.append(g.bar_used * filled, self.style_of(style))
            text.append(g.bar_free * (bar - filled), self.style_of("gauges--free"))
            text.append(f"{percent(share):>{VALUE_WIDTH}}")
        return text
