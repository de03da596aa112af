"""The lesson text: Markdown that can be drawn in plain ASCII."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Markdown


class LessonMarkdown(Markdown):
    """The step's text. With `--ascii` its bullets are ASCII too (borders are set in CSS)."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    ASCII_BULLETS = ["* ", "- ", "+ ", "* ", "- "]

    def __init__(self, markdown: str = "", *, ascii_only: bool = False, id: str | None = None,
                 classes: str = "") -> None:
        classes = f"{classes} -ascii" if ascii_only else classes
        super().__init__(markdown, id=id, open_links=False, classes=classes.strip() or None)
        if ascii_only:
            self.BULLETS = self.ASCII_BULLETS
