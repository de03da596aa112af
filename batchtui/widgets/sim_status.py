"""One line above the dials: running or paused, the speed, simulated time, iteration; on a
terminal too short for a help line under the dials, the focused dial's help instead."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widget import Widget


class SimStatus(Widget):
    """Redrawn every frame without a new layout (a Static's `update` lays out its parent)."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.line = ""
        self.short = ""
        """What is shown instead when `line` does not fit."""
        self.help: Text | None = None
        """Shown instead of the status while set (the dials' help, see `show_help`)."""

    def show(self, line: str, running: bool, short: str = "") -> None:
        self.set_class(running, "-running")
        if line != self.line or short != self.short:
            self.line, self.short = line, short
            self.refresh()

    def show_help(self, text: Text | None) -> None:
        """Show `text` (a focused dial's range) in place of the status; None: the status again."""
        if (text.plain if text is not None else None) != (self.help.plain if self.help is not None else None):
            self.help = text
            self.set_class(text is not None, "-help")
            self.refresh()

    def render(self) -> Text:
        if self.help is not None:
            return self.help
        width = self.outer_size.width - self.styles.gutter.width
        line = self.line if len(self.line) <= width or not self.short else self.short
        return Text(line, no_wrap=True, overflow="crop")
