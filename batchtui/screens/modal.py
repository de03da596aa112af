"""The base of every screen shown over the tutorial (contents, help, file prompts): it closes once.

Keys reach a screen through its own message queue, so two keys in one read (SSH and pastes deliver
them so) can both ask it to close: a queued Enter after a selection, or a close key after Enter.
Textual's `dismiss` pops whatever screen is on top, so a second call popped the tutorial itself
(a blank screen, or "Can't pop screen"). Here a screen closes only while it is the one on top,
and only once; later requests are dropped.
"""

from __future__ import annotations

from typing import TypeVar

from textual.await_complete import AwaitComplete
from textual.screen import ModalScreen

ResultType = TypeVar("ResultType")


class OverlayScreen(ModalScreen[ResultType]):
    """A modal screen that is dismissed at most once, and only while it is on top."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.closing = False
        """Set by the first `dismiss`: the result is on its way, the screen is leaving."""

    def dismiss(self, result: ResultType | None = None) -> AwaitComplete:
        if self.closing or not self.is_active:
            return AwaitComplete.nothing()
        self.closing = True
        return super().dismiss(result)

    def action_close(self) -> None:
        """Close without a result (the keys each screen binds to `close`)."""
        self.dismiss(None)
