"""A Rich renderable drawn once per width and kept: Textual renders a `Static`'s content to
measure its height and again to draw it, and again each time the screen opens, and a Rich table
of fifty rows takes tens of milliseconds a render (the help's key table: about half the time `?`
took to answer)."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment

KEPT = 16
"""Renderings kept (widths times contents): a few resizes' worth."""
_KEPT: dict[tuple, object] = {}


class RenderedOnce:
    """`make()` builds the renderable; `key` says what it shows (equal keys, equal content). The
    lines for a width, and the measurement, are made once and kept across instances."""

    def __init__(self, key: Hashable, make: Callable[[], RenderableType]) -> None:
        self.key = key
        self.make = make

    def _keep(self, what: tuple, build: Callable[[], object]) -> object:
        kept = _KEPT
        if what not in kept:
            if len(kept) >= KEPT:
                kept.pop(next(iter(kept)))
            kept[what] = build()
        return kept[what]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        lines = self._keep(("lines", self.key, width, options.ascii_only),
                           lambda: console.render_lines(self.make(), options.update(height=None), pad=False))
        new_line = Segment.line()
        for line in lines:
            yield from line
            yield new_line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return self._keep(("measure", self.key, options.max_width),
                          lambda: Measurement.get(console, options, self.make()))
