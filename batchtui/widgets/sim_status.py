"""One line above the dials: running or paused, the speed, simulated time, iteration; on a
terminal too short for a help line under the dials, the focused dial's help instead."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widget import Widget

from ..formatting import count, first_fitting, number
from ..keys import shown


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

    def show_run(self, sim, snapshot, sep: str) -> None:
        """The state of `sim` (a `LiveSimulation`) at `snapshot` (`status_line`)."""
        line, short = status_line(sim, snapshot, sep)
        self.show(line, sim.running, short)

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


def status_line(sim, snapshot, sep: str) -> tuple[str, str]:
    """The status line over the views, whole and short: the run's state (running at what speed,
    behind when the machine is busy, paused, finished), its clock and iteration."""
    if snapshot.finished:
        state = f"finished ({shown('sim.reset')} resets)"
    elif sim.behind:
        # The frame's share of time ran out before the simulated clock caught up.
        speed = sim.speed
        state = f"running {speed:.0f}x (CPU busy)" if speed >= 10 else f"running {speed:.2g}x (CPU busy)"
    elif sim.running:
        state = f"running {number(sim.time_scale)}x"
    else:
        state = "paused"
    t = snapshot.time
    clock = f"t {t:.2f} s" if t < 100 else f"t {t:.1f} s" if t < 1000 else f"t {t:,.0f} s"
    n = snapshot.iteration
    short = f"{state}{sep}{clock}"
    line = f"{short}{sep}iter {n:,}" if n < 10_000 else f"{short}{sep}iter {count(n)}"
    return line, short
