"""The first screen of a first launch: what the two panes are and the few keys that matter.
Any key closes it; `?` shows the same words again above the table of every key."""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.app import ComposeResult
from textual.widgets import Static

from .modal import OverlayScreen

ORIENTATION = """\
batchtui: how LLM inference servers batch requests, in twenty short steps.

Left    the lesson and its activity. ↑ ↓ PgUp PgDn scroll it while the bar
        on its left shows that it has the keys.
Right   one serving engine, simulated live: its state, the dials, the views.
Bottom  the step's goal, then the keys that work right now.

space   run or pause the simulation        .   one engine iteration
tab     to the answer box and the dials:  ← → turn a dial, ↑ ↓ another,
        enter types a value, esc goes back to the lesson
z       the simulation on the whole screen, and back
v       the step's other views, when they do not all fit
b       keep this run's numbers as "before" beside the live "now"
n  p    next, previous step     t  all steps     h  a hint     q  quit
?       these words again, and every key   d   every term, defined"""


class OrientationScreen(OverlayScreen[None]):
    """Shown over the first step on a first launch. Any key closes it (and does nothing else);
    keys read with it act on the tutorial once it has closed (`key_order.py`)."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")

    def compose(self) -> ComposeResult:
        words = self.app.words
        yield Static(words(ORIENTATION), id="orientation-text", markup=False)
        yield Static(words("Press any key to begin."), id="orientation-close", markup=False)

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        self.dismiss()
