"""`d`: the glossary, every term the lessons use with its meaning and the step that teaches it
(`steps.glossary`), in lesson order, opened at the terms of the step on show."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from steps import glossary

from ..widgets.pane import Pane
from .modal import OverlayScreen

NAME_WIDTH = 20
"""Cells for a term's name: the longest ("continuous batching") and a space."""


class GlossaryScreen(OverlayScreen[None]):
    """Closes with d, q, Escape or Enter (or ctrl+g, the key that opens it while typing); ↑ ↓
    PgUp PgDn scroll it. `step` is the step on show: its terms are brought into sight."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = [Binding("d,q,escape,enter,ctrl+g", "close", "close"),
                Binding("question_mark,f1", "app.help", "help", show=False)]

    def __init__(self, step: int = 1) -> None:
        super().__init__()
        self.step = step

    def compose(self) -> ComposeResult:
        words = self.app.words
        yield Static(Text("Glossary: d q esc or enter close it; up/down scroll", style="bold"),
                     id="glossary-title")
        with Pane(id="glossary-body"):
            for i, term in enumerate(glossary.terms()):
                row = Table.grid(padding=(0, 1))
                row.add_column(width=NAME_WIDTH, no_wrap=True)
                row.add_column(ratio=1)
                meaning = Text(words(term.meaning))
                meaning.append(f"  step {term.step}", style="dim")
                row.add_row(Text(words(term.name), style="bold"), meaning)
                yield Static(row, id=f"term-{i}", classes="glossary-term")

    def on_mount(self) -> None:
        body = self.query(Pane)
        if not body:  # the app is quitting: the screen was mounted without being composed
            return
        body.first().focus()
        # The step's own terms (or the next ones taught after it) at the top of the pane.
        terms = glossary.terms()
        first = next((i for i, t in enumerate(terms) if t.step >= self.step), len(terms) - 1)
        if first:
            self.call_after_refresh(lambda: body.first().scroll_to_widget(self.query_one(f"#term-{first}"),
                                                                          animate=False, top=True))
