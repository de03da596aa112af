"""The lesson text: Markdown that can be drawn in plain ASCII."""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt
from textual.widgets import Markdown


def lesson_parser() -> MarkdownIt:
    """Textual's Markdown parser ("gfm-like") without linkify, which makes a link of a bare
    address: no lesson text has one (tests/unit/test_lesson_parser.py parses them all both ways),
    and its first use compiled a regular expression: 6-8 ms of CPU before the first frame."""
    return MarkdownIt("gfm-like", {"linkify": False})


class LessonMarkdown(Markdown):
    """The step's text. With `--ascii` its bullets are ASCII too (borders are set in CSS)."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    ASCII_BULLETS = ["* ", "- ", "+ ", "* ", "- "]

    def __init__(self, markdown: str = "", *, ascii_only: bool = False, id: str | None = None,
                 classes: str = "") -> None:
        classes = f"{classes} -ascii" if ascii_only else classes
        super().__init__(markdown, id=id, open_links=False, classes=classes.strip() or None,
                         parser_factory=lesson_parser)
        if ascii_only:
            self.BULLETS = self.ASCII_BULLETS
