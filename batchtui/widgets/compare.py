"""Two runs side by side in two columns of the same metrics: a step's run beside its comparison
(continuous | static), or a pinned "before" beside the live "now"."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from rich.text import Text

from ..formatting import count, exact_count, latency, percent, worst_gap
from .sim_view import SimView, encoder_pass_size, seat_capacity

LABEL_WIDTH = 9


class Row(NamedTuple):
    label: str
    value: Callable[[object], str]
    """The cell for one snapshot."""
    relevant: Callable[[object, object], bool] = lambda a, b: True
    """Whether the row says anything for this pair (padding only where a batch can pad...)."""


def _latency(attribute: str) -> Callable[[object], str]:
    def cell(snap) -> str:
        return latency(snap, getattr(snap.metrics, attribute))
    return cell


def _pads(a, b) -> bool:
    return any(s.batching in ("static", "dynamic") or s.metrics.padding_share for s in (a, b))


ROWS: dict[str, Row] = {
    "batch": Row("batch", lambda s: f"{s.running or encoder_pass_size(s):,}/{seat_capacity(s):,}"),
    "queue": Row("queue", lambda s: exact_count(s.queue_len)),
    # An encoder (step 4's embedder) generates no tokens: its throughput is its req/s.
    "tokens/s": Row("tokens/s", lambda s: "-" if s.encoder else count(s.metrics.output_tokens_per_s)),
    "req/s": Row("req/s", lambda s: count(s.metrics.requests_per_s)),
    "TTFT p50": Row("TTFT p50", _latency("ttft_p50")),
    "TTFT p99": Row("TTFT p99", _latency("ttft_p99")),
    "TPOT p50": Row("TPOT p50", _latency("tpot_p50")),
    "TPOT p99": Row("TPOT p99", _latency("tpot_p99")),
    "gap max": Row("gap max", worst_gap),
    "padding": Row("padding", lambda s: percent(s.metrics.padding_share), _pads),
    "preempted": Row("preempted", lambda s: f"{s.metrics.num_preemptions:,}",
                     lambda a, b: bool(a.metrics.num_preemptions or b.metrics.num_preemptions)),
    "done": Row("done", lambda s: exact_count(s.metrics.completed)),
}
"""Every row, in the order they are drawn."""

PRIORITY = ("batch", "tokens/s", "TTFT p99", "padding", "preempted", "TPOT p50", "queue", "req/s",
            "TTFT p50", "TPOT p99", "gap max", "done")
"""Which rows stay when the view is given fewer lines than it has rows."""
ENCODER_PRIORITY = tuple({"tokens/s": "req/s", "req/s": "tokens/s"}.get(n, n) for n in PRIORITY)
"""The same beside an encoder's run, whose throughput is requests/s (it makes no tokens)."""
MIN_ROWS = 3
CONDITIONAL = ("padding", "preempted")


class CompareView(SimView):
    """Column headers, then one line per metric: `label  left  right`. Fed two snapshots by
    name (`left_source`, `right_source`: "main", "compare" or "pinned")."""

    view_name = "compare"
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"compare--title", "compare--head", "compare--label", "compare--value",
                         "compare--better", "compare--dim"}

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.left_source, self.right_source = "main", "compare"
        self.left = self.right = None
        self.headers = ("this run", "beside")
        self.title = ""
        """A line above the columns saying what they are, when the headers alone do not."""

    def configure(self, left_source: str, right_source: str, headers: tuple[str, str], title: str = "") -> None:
        self.left_source, self.right_source = left_source, right_source
        self.headers, self.title = headers, title
        self.redraw()

    def update_frame(self, frames: Mapping[str, object]) -> None:
        left, right = frames.get(self.left_source), frames.get(self.right_source)
        if left is not None:
            self.left = left
        if right is not None:
            self.right = right
        self.snapshot = self.right or self.left
        self.redraw()

    def _rows(self) -> list[str]:
        if self.left is None or self.right is None:
            return []
        return [name for name in ROWS if ROWS[name].relevant(self.left, self.right)]

    def min_lines(self, width: int) -> int:
        # The header and the first rows; a row that only some runs have (padding, preemptions)
        # is why those runs are compared, so it is never cut. The title goes first when short.
        names = self._rows()
        return 1 + MIN_ROWS + sum(1 for n in CONDITIONAL if n in names)

    def wanted_lines(self, width: int) -> int:
        return 1 + bool(self.title) + max(MIN_ROWS, len(self._rows()) or len(ROWS) - 3)

    def build(self, width: int) -> Text:
        text = Text()
        titled = bool(self.title) and (self.max_lines is None or self.max_lines >= 2 + MIN_ROWS)
        if titled:
            text.append(self.title, self.style_of("compare--title"))
            text.append("\n")
        column = max(6, (width - LABEL_WIDTH) // 2)
        left_head, right_head = (h[:column - 1] for h in self.headers)
        text.append(f"{'':{LABEL_WIDTH}}{left_head:>{column}}{right_head:>{column}}", self.style_of("compare--head"))
        names = self._rows()
        if not names:
            text.append("\n")
            text.append("waiting for both runs", self.style_of("compare--dim"))
            return text
        room = len(names) if self.max_lines is None else max(1, self.max_lines - 1 - titled)
        if room < len(names):
            encoder = self.left.encoder or self.right.encoder
            keep = set([n for n in (ENCODER_PRIORITY if encoder else PRIORITY) if n in names][:room])
            names = [n for n in names if n in keep]
        label, value = self.style_of("compare--label"), self.style_of("compare--value")
        for name in names:
            row = ROWS[name]
            text.append("\n")
            text.append(f"{row.label:<{LABEL_WIDTH}}", label)
            text.append(f"{row.value(self.left):>{column}}{row.value(self.right):>{column}}", value)
        return text
