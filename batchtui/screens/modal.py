"""The base of every screen shown over the tutorial (contents, help, file prompts): it closes once.

Textual's `dismiss` pops whatever screen is on top, so a second request to close (a key and a
message it posted both closing it, or anything acting on a screen already leaving) would pop the
tutorial itself (a blank screen, or "Can't pop screen"). Here a screen closes only while it is
the one on top, and only once; later requests are dropped. (Keys from the terminal come one at a
time, each after the one before has been acted on: `key_order.py`.)
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

    def on_screen_resume(self) -> None:
        self.closing = False  # shown again (a screen kept installed)

    def action_close(self) -> None:
        """Close without a result (the keys each screen binds to `close`)."""
        self.dismiss(None)
