"""What shows instead of a broken layout when the terminal is smaller than 80x24."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

MIN_WIDTH, MIN_HEIGHT = 80, 24


class TooSmallScreen(Screen):
    """Pushed by the app when the terminal shrinks below the minimum, popped when it grows back,
    so whatever was open underneath comes back as it was."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = [("q,ctrl+q", "app.quit", "quit")]

    def compose(self) -> ComposeResult:
        yield Static(id="too-small-message", markup=False)

    def on_mount(self) -> None:
        self._say()

    def on_resize(self) -> None:
        self._say()

    def _say(self) -> None:
        # Short lines, most important first: the whole message fits 30x8, and what a tinier
        # terminal cuts off is the least needed.
        width, height = self.app.size
        self.query_one(Static).update(
            f"Terminal too small: {width}x{height}.\n"
            f"batchtui needs at least {MIN_WIDTH}x{MIN_HEIGHT}:\n"
            "please enlarge it.\n"
            "(q quits)"
        )
