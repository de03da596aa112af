"""The simulation column of the tutorial: the run's status line, the step's dials and the views.

The screen gives the pane a way to read the live run from its one holder (`run`, passed on to
the dials: `screens/step_run.py`, no copies to keep in step) and how much room it has (`fit`: wide enough for
the dials in two columns, too short for the dials' help line); the pane draws the run's frames
and status, keeps the dials in the shape the room wants, and on a short screen shows a focused
dial's help in the status line (the help line under the dials is hidden there by the screen's
CSS). The dials post what the learner moved (`DialList.Moved`, `Refused`) up to the screen.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.containers import Vertical

from .dial_list import DialList
from .sim_status import SimStatus
from .view_stack import ViewStack


class SimPane(Vertical):
    """Status line, dials and views of one live run."""

    def __init__(self, view_kinds, run: Callable[[], object] = lambda: None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.stack = ViewStack(view_kinds, id="views")
        """The views (made here so the screen's helpers can be given them before it mounts)."""
        self.live_run = run
        """The live run (`LiveSimulation`) as its holder has it now, or None."""
        self.wide = False
        """Room for the dials in two columns (zoomed, or a wide terminal)."""
        self.short = False
        """Too few lines for the dials' help line: a focused dial's help shows in the status line."""

    def compose(self):
        yield SimStatus(id="sim-status")
        yield DialList(self.live_run, id="dials")
        yield self.stack

    @property
    def dials(self) -> DialList:
        return self.query_one(DialList)

    @property
    def run(self):
        """The live run (`LiveSimulation`) the pane shows and its dials set; None: none runs."""
        return self.live_run()

    async def show_step(self, step, has_input: bool = False) -> None:
        """The step's dials at the values its scenario starts with, in the shape the room wants;
        `has_input`: the activity has an answer box, first in the tab order."""
        await self.dials.show_step(step, self.wide)
        self.dials.answer_first(has_input)

    def fit(self, wide: bool, short: bool, dials: str = "keep") -> None:
        """The room changed (`z`, a resize): the dials' help where it fits, and the dials "keep"
        (a step's own are mounted next), mounted again in the shape it wants ("reshape", if it
        is another) or mounted again whatever the shape ("again"), keeping values and focus."""
        self.wide, self.short = wide, short
        dial_list = self.dials
        if dials == "again" or (dials == "reshape" and dial_list.wants_mount_again(wide)):
            self.run_worker(partial(dial_list.mount_again, wide), group="dials")
        self.place_help()

    def focus_moved(self) -> None:
        """Focus moved: the dials' help line (or the status line) says what the focused dial takes."""
        self.dials.update_help()
        self.place_help()

    def place_help(self) -> None:
        self.query_one(SimStatus).show_help(self.dials.focused_help if self.short else None)

    def on_dial_list_help_changed(self, message: DialList.HelpChanged) -> None:
        self.place_help()

    def show_status(self, snapshot=None) -> None:
        """The run's state in the status line (at `snapshot`, else the run's latest)."""
        run = self.run
        if run is not None:
            self.query_one(SimStatus).show_run(run, snapshot or run.snapshot(), self.app.settings.glyphs.sep)

    def draw(self, frames: dict) -> None:
        """The views at `frames` (source -> snapshot: "main", "compare", "pinned") and the
        status line at the live run's."""
        self.stack.update_frame(frames)
        self.show_status(frames["main"])
