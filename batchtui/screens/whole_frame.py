"""A screen whose next frame can be asked to be drawn whole.

Textual draws a frame of only the parts of the screen it has heard have changed, and each widget
tells the screen it has changed from its own message queue, in its own time. After a change of
many widgets at once (a step change: header, lesson, activity, dials, views, status, goal, keys)
the first frame could come before some had told: it drew the new step's header and lesson over
the old step's views, clock and goal line. `draw_whole_next_frame()` makes that frame a whole
one: every widget drawn as it is now.
"""

from __future__ import annotations

from textual.screen import Screen


class WholeFrameScreen(Screen):
    """A `Screen` with `draw_whole_next_frame`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._whole_next = False

    def draw_whole_next_frame(self) -> None:
        """The next frame this screen draws is a whole one."""
        self._whole_next = True

    def _compositor_refresh(self) -> None:
        # Textual's step from the screen's layout to a frame on the terminal: the whole screen
        # marked to repaint first, the frame is drawn whole.
        if self._whole_next and self.is_current:
            self._whole_next = False
            self._set_dirty()
            self._compositor.update_widgets({self})
        super()._compositor_refresh()
