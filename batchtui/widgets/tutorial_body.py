"""The tutorial's body: the lesson pane beside the simulation pane, and what passes between them.

The body owns the room the two panes share: whether the simulation is zoomed (`z`: the lesson
hidden), what that leaves the dials (`SimPane.fit`: two columns when wide or zoomed, the help
line in the status line on a short screen, read from the screen's breakpoint classes), and where
the keys go back to when a dial or the answer box is left (the lesson, or nothing while zoomed).
It opens a step in both panes, draws the run's frames in the views and the activity, runs what
an activity asks for (`ActivityView.RunDials`, on the step's run), and when the learner or an
activity moves a dial (`DialList.Moved`, which then goes on up to the screen) has the "before"
table's title, the curve's sweep and the activity follow. It is given the step's run
(`StepRun`, with the screen's "before" and sweeps, which work on the simulation pane's views); it
reads the step from the lesson pane.
"""

from __future__ import annotations

import asyncio
from functools import partial

from textual import on
from textual.containers import Horizontal

from .activities.base import ActivityView
from .answer_box import AnswerBox
from .dial import DialControl
from .dial_list import DialList
from .question_pane import QuestionPane
from .sim_pane import SimPane


class TutorialBody(Horizontal):
    """The lesson pane and the simulation pane, zoomed (`z`) or side by side."""

    def __init__(self, lesson: QuestionPane, sim_pane: SimPane, step_run, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lesson = lesson
        self.sim_pane = sim_pane
        self.step_run = step_run
        """The step's run (`screens/step_run.py`), with the "before" beside it and the sweeps."""
        self.zoomed = False
        """The simulation has the whole screen (`z`); the lesson is hidden."""

    def compose(self):
        yield self.lesson
        yield self.sim_pane

    def zoom(self, zoomed: bool, dials: str = "keep") -> None:
        """Zoomed or not; the simulation pane told its room (`SimPane.fit`: what the `dials` do)."""
        self.zoomed = zoomed
        self.set_class(zoomed, "-zoomed")
        screen = self.screen
        self.sim_pane.fit(zoomed or screen.has_class("-wide"), screen.has_class("-short"), dials)

    def toggle_zoom(self) -> None:
        """`z`: zoomed, the lesson gives up the keys; back, it takes them if nothing has them."""
        self.zoom(not self.zoomed, "again")
        focused = self.screen.focused
        if self.zoomed and focused is self.lesson:
            self.screen.set_focus(None)
        elif not self.zoomed and focused is None:
            self.focus_lesson()

    def focus_lesson(self) -> None:
        """The lesson takes the keys (↑ ↓ scroll it, ← → change step); zoomed, nothing does.
        At once, not queued as `Widget.focus` does: a tab read with the step key that opened
        the step is acted on next and must find the lesson, not have it take the keys back."""
        self.screen.set_focus(None if self.zoomed else self.lesson)

    @on(DialControl.Leave)
    @on(AnswerBox.Leave)
    def _left(self, message) -> None:
        message.stop()
        self.focus_lesson()

    def hint(self) -> str:
        """`h`: the lesson's next hint (the lesson back in sight for it if zoomed); what to say."""
        words = self.lesson.next_hint()
        if not words and self.zoomed:
            self.zoom(False, "again")
        return words

    # -- a step, its frames and its dials
    async def show_step(self, step, view) -> None:
        """`step` in both panes (`view`: its activity), unzoomed, nothing pinned or beside, the
        views arranged for its runs and the lesson holding the keys."""
        self.zoom(False)  # the playground too: its things to try are in the lesson pane
        # Text, dials and activity at once: each waits on Textual's layout, not on the others.
        await asyncio.gather(self.lesson.show_step(view),
                             self.sim_pane.show_step(step, view is not None and view.has_input))
        runs = self.step_run
        runs.before.forget()
        runs.sweeps.forget()
        runs.before.arrange(step, runs.sim)
        self.focus_lesson()

    def draw(self, frame) -> None:
        """The views (beside a pinned run, if any) and the activity at the state `frame` holds."""
        pinned = self.step_run.before.pinned
        frames = {"main": frame.snapshot, "compare": frame.compare, "pinned": (pinned or (None,))[0]}
        self.sim_pane.draw({source: snapshot for source, snapshot in frames.items() if snapshot is not None})
        self.lesson.activity.update_snapshot(frame.snapshot, frame.compare)

    def on_activity_view_run_dials(self, message: ActivityView.RunDials) -> None:
        # Dials an activity set (a worked answer's, "show me"'s) are followed like the learner's:
        # step 16's curve swept the old seats beside a worked answer for the new ones.
        if moved := self.step_run.run_asked(message):
            self.dials_moved(moved)

    def on_dial_list_moved(self, message: DialList.Moved) -> None:
        self.dials_moved(message.moved)

    def dials_moved(self, moved: dict) -> None:
        """Dials moved on the run: the "before" table's title, the curve (of the dials on show)
        and the activity follow."""
        step, run, sweeps = self.lesson.step, self.step_run.sim, self.step_run.sweeps
        self.step_run.before.configure(step, run)
        if sweeps.wanted(step) and any(map(step.sweep.invalidated_by, moved)):
            self.run_worker(partial(sweeps.start, step, run.scenario), group="sweep-start")
        self.run_worker(partial(self.lesson.activity.scenario_changed, run.scenario), group="activity")

    def next_views(self) -> str:
        """`v`: the next page of views; what to say if they are all in sight."""
        stack = self.sim_pane.stack
        if stack.page_count > 1:
            stack.next_page()
            return ""
        return "Every view of this step is in sight."
