"""A one-line text box drawn as a band of colour: no box glyphs, so `--ascii` needs nothing."""

from __future__ import annotations

from textual.widgets import Input


class AnswerBox(Input):
    DEFAULT_CSS = """
    AnswerBox {
        height: 1;
        border: none;
        padding: 0 1;
        background: $boost;
        &:focus { border: none; background: $primary-muted; }
    }
    """

    def on_mount(self) -> None:
        settings = getattr(self.app, "settings", None)
        if settings is not None:
            self.cursor_blink = settings.cursor_blink
