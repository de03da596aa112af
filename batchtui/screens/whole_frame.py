"""Two screen bases for the tutorial's frames: a next frame drawn whole, and the first frame
styled once.

Textual draws a frame of only the parts of the screen it has heard have changed, and each widget
tells the screen it has changed from its own message queue, in its own time. After a change of
many widgets at once (a step change: header, lesson, activity, dials, views, status, goal, keys)
the first frame could come before some had told: it drew the new step's header and lesson over
the old step's views, clock and goal line. `draw_whole_next_frame()` makes that frame a whole
one: every widget drawn as it is now.

Textual restyles every node of a screen whenever the screen is resumed (made the one on top), in
case a style changed while it was covered. The first resume comes just after the mount, which
styled each node as it came: for the tutorial (its breakpoint classes set before the push,
`BatchApp.on_mount`) that restyle of some 35-75 nodes and their parts changed no style
(tests/app/test_first_frame.py restyles after the first frame and compares) and cost the first
frame about 15 ms of CPU (measured beside `benchmarks/app_benchmark.py`, load 6). `StyledOnceScreen` skips it; every later
resume (the help or the contents closed) restyles as Textual does.
"""

from __future__ import annotations

from textual import events
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


class StyledOnceScreen(Screen):
    """A `Screen` whose first resume does not restyle it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.resumed = False
        """Whether the screen has been resumed since it was made."""

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # (Textual calls this before `Screen`'s own handler, which reads `refresh_styles`.)
        if not self.resumed:
            self.resumed = True
            event.refresh_styles = False
