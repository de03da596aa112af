"""A scrolling pane that leaves left/right to the step keys."""

from __future__ import annotations

from textual.containers import VerticalScroll


class Pane(VerticalScroll):
    """Up/down/page keys scroll it when focused; left and right fall through to the screen (they
    move between steps), since the panes never scroll sideways."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("scroll_left", "scroll_right"):
            return False
        return super().check_action(action, parameters)
