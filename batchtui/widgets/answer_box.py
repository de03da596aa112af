"""A one-line text box drawn as a band of colour: no box glyphs, so `--ascii` needs nothing."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class AnswerBox(Input):
    """Focused, it is marked by a bar on its left (a glyph, so it shows under NO_COLOR too) and
    by its cursor. Escape leaves it: the screen puts focus back on the lesson."""

    DEFAULT_CSS = """
    AnswerBox {
        height: 1;
        border: none;
        border-left: blank;
        padding: 0 1;
        background: $boost;
        &:focus { border: none; border-left: wide $accent; background: $primary-muted; }
        &.-ascii:focus { border-left: ascii $accent; }
    }
    """
    BINDINGS = [Binding("escape", "leave", "leave", show=False)]

    class Leave(Message):
        """Escape in the box: the learner wants the plain keys back."""

    def on_mount(self) -> None:
        settings = getattr(self.app, "settings", None)
        if settings is not None:
            self.cursor_blink = settings.cursor_blink
            # (its own class: DEFAULT_CSS is scoped to the box, so a screen's `.-ascii` cannot reach it)
            self.set_class(settings.ascii_only, "-ascii")

    def action_leave(self) -> None:
        self.post_message(self.Leave())
