"""One line above the dials: running or paused, the speed, simulated time, iteration; on a
terminal too short for a help line under the dials, the focused dial's help instead."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widget import Widget

from ..formatting import first_fitting


class SimStatus(Widget):
    """Redrawn every frame without a new layout (a Static's `update` lays out its parent)."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.line = ""
        self.short = ""
        """What is shown instead when `line` does not fit."""
        self.help: tuple[Text, ...] | None = None
        """Shown instead of the status while set (the dials' help and its shorter forms, longest
        first, see `show_help`)."""

    def show(self, line: str, running: bool, short: str = "") -> None:
        self.set_class(running, "-running")
        if line != self.line or short != self.short:
            self.line, self.short = line, short
            self.refresh()

    def show_help(self, texts: tuple[Text, ...] | None) -> None:
        """Show `texts` (a focused dial's range, then shorter forms of it) in place of the
        status, the longest that fits; None: the status again."""
        def plain(forms):
            return None if forms is None else tuple(t.plain for t in forms)

        if plain(texts) != plain(self.help):
            self.help = texts
            self.set_class(texts is not None, "-help")
            self.refresh()

    def render(self) -> Text:
        if self.help is not None:
            return first_fitting(self.help, self.content_size.width)
        width = self.outer_size.width - self.styles.gutter.width
        line = self.line if len(self.line) <= width or not self.short else self.short
        return Text(line, no_wrap=True, overflow="crop")
