"""What shows instead of a broken layout when the terminal is smaller than 80x22 (the tutorial's
80x24 layout fits an 80x23 tmux pane and, a second status line under it, 80x22)."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from ..keys import BY_ID, shown

MIN_WIDTH, MIN_HEIGHT = 80, 22


class TooSmallScreen(Screen):
    """Pushed by the app when the terminal shrinks below the minimum, popped when it grows back,
    so whatever was open underneath comes back as it was."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = [Binding(f"{BY_ID['app.quit'].keys},{BY_ID['chord.quit'].keys}", "app.quit", "quit")]

    def compose(self) -> ComposeResult:
        yield Static(id="too-small-message", markup=False)

    def on_mount(self) -> None:
        self._say()

    def on_resize(self) -> None:
        self._say()

    def _say(self) -> None:
        width, height = self.app.size
        self.query_one(Static).update(too_small_message(width, height))


def too_small_message(width: int, height: int) -> str:
    """The longest wording whose every line fits `width` cells and whose lines fit `height`:
    the message is never cut or wrapped, down to a handful of cells (the quit key always quits)."""
    need = f"{MIN_WIDTH}x{MIN_HEIGHT}"
    quits = f"({shown('app.quit')} quits)"
    wordings = (
        (f"Terminal too small: {width}x{height}.", f"batchtui needs at least {need}:", "please enlarge it.",
         quits),
        ("Terminal too small:", f"{width}x{height}. batchtui needs", f"at least {need}: please",
         f"enlarge it. {quits}"),
        (f"Too small: {width}x{height}.", f"Needs {need}:", "please enlarge.", quits),
        (f"Too small: {width}x{height}.", f"Needs {need}.", quits),
        (f"{width}x{height}: too small.", f"Needs {need}."),
        (f"Needs {need}.",),
        (f"{need}+",),
        (need,),
    )
    for lines in wordings:
        if len(lines) <= height and all(len(line) <= width for line in lines):
            return "\n".join(lines)
    return wordings[-1][0][:width]
