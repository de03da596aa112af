"""One line for things the learner must read: a refused dial value, a progress file set aside."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from textual.widgets import Static

MAX_LINES = 2
"""A notice takes two lines at most: longer, it pushes the goal and keys off a 24-line screen."""
_ASIDE = re.compile(r" ?\([^()]*\)")  # a parenthesis holding no other


def fit(message: str, width: int, lines: int = MAX_LINES) -> str:
    """`message` within `lines` lines of `width` cells: asides in parentheses dropped, the last
    first, while it is longer; then cut with an ellipsis. (`message` keeps the whole text.)"""
    def fits(text: str) -> bool:
        return len(textwrap.wrap(text, width)) <= lines

    while not fits(message):
        asides = list(_ASIDE.finditer(message))
        if not asides:
            break
        last = asides[-1]
        message = message[:last.start()] + message[last.end():]
    if not fits(message):
        kept = textwrap.wrap(message, width)[:lines]
        kept[-1] = kept[-1][: max(0, width - 3)].rstrip() + "..."  # (ASCII: also under --ascii)
        message = " ".join(kept)
    return message


class NoticeLine(Static):
    """Hidden while empty. `-error` when the message is a refusal, `-info` otherwise. It stays
    until the next message or until cleared (no timer: a timer would make screenshots flaky)."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.message = ""

    def say(self, message: str, error: bool = False) -> None:
        self.message = message
        width = (self.app.size.width if self.is_attached else 80) - 2  # (its padding)
        self.update(fit(message, max(width, 20)))
        self.set_class(bool(message), "-shown")
        self.set_class(error, "-error")
        self.set_class(not error, "-info")

    def clear(self) -> None:
        self.say("")
