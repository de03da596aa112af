"""`?`: what the screen's parts are (the first-launch orientation), then every key, grouped,
straight from the central table."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from .. import keys
from ..widgets.pane import Pane
from ..widgets.rendered_once import RenderedOnce
from .modal import OverlayScreen
from .orientation import ORIENTATION


class HelpScreen(OverlayScreen[None]):
    """Closes with ?, q, Escape or Enter: Escape is never the only way out. Made once and kept
    (`BatchApp.action_help`): it opens again without being composed, laid out and styled anew
    (half the time of a `?`); each time from its top."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = [("question_mark,q,escape,enter,f1", "close", "close")]

    def compose(self) -> ComposeResult:
        ascii_only = self.app.settings.ascii_only
        words = self.app.words
        rows = tuple((group, tuple((keys.display_keys(key, ascii_only), words(key.help))
                                   for key in keys.KEYS if key.group == group))
                     for group in keys.GROUPS)

        def table() -> Table:
            grid = Table.grid(padding=(0, 2))
            grid.add_column(no_wrap=True)
            grid.add_column()
            for group, group_keys in rows:
                grid.add_row(Text(group, style="bold"), "")
                for shown, help_text in group_keys:
                    grid.add_row(Text(shown), help_text)
                grid.add_row("", "")
            return grid
        with Pane(id="help-body"):
            yield Static(Text("Help (close it with ? q esc or enter; up/down scroll)", style="bold"),
                         id="help-title")
            yield Static(words(ORIENTATION), id="help-orientation", markup=False)
            yield Static(Text("Every key", style="bold"), id="help-keys-title")
            yield Static(RenderedOnce(rows, table), id="help-table")

    def on_screen_resume(self) -> None:
        for body in self.query("#help-body"):
            body.scroll_home(animate=False)
