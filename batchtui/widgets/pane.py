"""A scrolling pane that leaves left/right to the step keys."""

from __future__ import annotations

from textual.containers import VerticalScroll


class Pane(VerticalScroll):
    """Up/down/page keys scroll it when focused; left and right fall through to the screen (they
    move between steps), since the panes never scroll sideways."""

    def watch_has_focus(self, has_focus: bool) -> None:
        # Only the pane's own look follows its focus (the bar on its left, its scrollbar): its
        # contents' styles name no focus of theirs. Textual restyles every descendant on a focus
        # change, 20-50 ms for a lesson of 20-65 widgets, on every Tab and Esc.
        self.app.stylesheet.update_nodes([self], animate=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("scroll_left", "scroll_right"):
            return False
        return super().check_action(action, parameters)
