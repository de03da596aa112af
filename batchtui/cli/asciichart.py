"""A small scatter chart in plain ASCII, for throughput against latency in a terminal or a log.

Latency runs up a logarithmic axis: past the knee it grows by orders of magnitude, and a linear
axis would flatten every point before it onto the floor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..formatting import count

POINT = "o"
KNEE = "*"


def _y_labels(y_lo: float, y_hi: float, height: int, log_y: bool) -> dict[int, str]:
    """Round values (1, 10, 100, ... or with 2 and 5 between on a short axis) at their rows."""
    if not log_y:
        return {}

    def row_of(v: float) -> int:
        return round((y_hi - math.log10(v)) / (y_hi - y_lo) * (height - 1))

    decades = [10.0 ** k for k in range(math.floor(y_lo), math.ceil(y_hi) + 1)]
    values = [v for v in decades if y_lo <= math.log10(v) <= y_hi]
    if len(values) < 2:
        values = [m * d for d in decades for m in (1, 2, 5) if y_lo <= math.log10(m * d) <= y_hi]
    labels: dict[int, str] = {}
    for v in values:
        r = row_of(v)
        if all(abs(r - other) > 1 for other in labels):
            labels[r] = count(int(v) if float(v).is_integer() else v)  # a decade's tick: 10, not 10.0
    return labels if len(labels) >= 2 else {}


def scatter(points: Sequence[tuple[float, float]], *, highlight: int | None = None,
            width: int = 60, height: int = 14, x_label: str = "", y_label: str = "",
            log_y: bool = True, symbols: Sequence[str] | None = None, overlap: str = "") -> list[str]:
    """Lines of a chart of (x, y) points; the point at index `highlight` is drawn as KNEE.

    x starts at 0; y is logarithmic by default. Points with a non-finite or (on a log axis)
    non-positive coordinate are left out. `symbols` gives each point its own character (two
    curves on one chart); later points are drawn over earlier ones, as `overlap` when given and
    the cell holds another curve's symbol.
    """
    def ok(x: float, y: float) -> bool:
        return math.isfinite(x) and math.isfinite(y) and (y > 0 or not log_y)

    shown = [(i, x, y) for i, (x, y) in enumerate(points) if ok(x, y)]
    if not shown:
        return ["(nothing to chart)"]
    tx = (lambda v: math.log10(v)) if log_y else (lambda v: v)
    x_max = max(x for _, x, _ in shown) * 1.05 or 1.0
    ys = [tx(y) for _, _, y in shown]
    y_lo, y_hi = min(ys), max(ys)
    pad = max((y_hi - y_lo) * 0.08, 0.05 if log_y else abs(y_hi) * 0.05 or 1.0)
    y_lo, y_hi = y_lo - pad, y_hi + pad

    grid = [[" "] * width for _ in range(height)]
    for i, x, y in sorted(shown, key=lambda p: p[0] == highlight):  # the knee is drawn last
        col = min(width - 1, max(0, round(x / x_max * (width - 1))))
        row = min(height - 1, max(0, round((y_hi - tx(y)) / (y_hi - y_lo) * (height - 1))))
        mark = KNEE if i == highlight else (symbols[i] if symbols else POINT)
        if overlap and grid[row][col] not in (" ", mark, overlap):
            mark = overlap
        grid[row][col] = mark

    def y_at(row: int) -> float:  # the value a row stands for
        v = y_hi - row / (height - 1) * (y_hi - y_lo)
        return 10 ** v if log_y else v

    labels = _y_labels(y_lo, y_hi, height, log_y) or {r: count(y_at(r)) for r in (0, height - 1)}
    margin = max(len(t) for t in labels.values()) + 1
    lines = [y_label] if y_label else []
    for r in range(height):
        lines.append(f"{labels.get(r, ''):>{margin}} |" + "".join(grid[r]).rstrip())
    lines.append(" " * margin + " +" + "-" * width)
    # x ticks at 0, 1/2 and the end of the axis
    ticks = [" "] * (width + 2)
    for frac in (0.0, 0.5, 1.0):
        text = count(frac * x_max) if frac else "0"
        start = min(len(ticks) - len(text), round(frac * (width - 1)) + 2 - (len(text) // 2 if frac else 0))
        ticks[start:start + len(text)] = list(text)
    lines.append(" " * margin + "".join(ticks).rstrip())
    if x_label:
        lines.append(" " * margin + x_label.center(width + 2).rstrip())
    return lines
