"""One line for things the learner must read: a refused dial value, a progress file set aside."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static


class NoticeLine(Static):
    """Hidden while empty. `-error` when the message is a refusal, `-info` otherwise. It stays
    until the next message or until cleared (no timer: a timer would make screenshots flaky)."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.message = ""

    def say(self, message: str, error: bool = False) -> None:
        self.message = message
        self.update(message)
        self.set_class(bool(message), "-shown")
        self.set_class(error, "-error")
        self.set_class(not error, "-info")

    def clear(self) -> None:
        self.say("")
