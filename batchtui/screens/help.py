"""`?`: every key, grouped, straight from the central table."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from .. import keys
from ..widgets.pane import Pane
from .modal import OverlayScreen


class HelpScreen(OverlayScreen[None]):
    """Closes with ?, q, Escape or Enter: Escape is never the only way out."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = [("question_mark,q,escape,enter,f1", "close", "close")]

    def compose(self) -> ComposeResult:
        ascii_only = self.app.settings.ascii_only
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True)
        table.add_column()
        for group in keys.GROUPS:
            table.add_row(Text(group, style="bold"), "")
            for key in keys.KEYS:
                if key.group == group:
                    table.add_row(Text(keys.display_keys(key, ascii_only)), key.help)
            table.add_row("", "")
        with Pane(id="help-body"):
            yield Static(Text("Keys (close this with ? q esc or enter; up/down scroll)", style="bold"),
                         id="help-title")
            yield Static(table, id="help-table")
