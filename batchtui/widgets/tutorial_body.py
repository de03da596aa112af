"""The tutorial's body: the lesson pane beside the simulation pane, and `z`, which gives the
simulation the whole screen.

The body owns the room the two panes share: whether the simulation is zoomed (the lesson
hidden), what that leaves the dials (`SimPane.fit`: two columns when wide or zoomed, the help
line in the status line on a short screen, read from the screen's breakpoint classes), and where
the keys go back to when a dial or the answer box is left (the lesson, or nothing while zoomed).
The screen tells it of a step opening and a resize; the footer reads `zoomed`.
"""

from __future__ import annotations

from textual import on
from textual.containers import Horizontal

from .answer_box import AnswerBox
from .dial import DialControl
from .question_pane import QuestionPane
from .sim_pane import SimPane


class TutorialBody(Horizontal):
    """The lesson pane and the simulation pane, zoomed (`z`) or side by side."""

    def __init__(self, lesson: QuestionPane, sim_pane: SimPane, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lesson = lesson
        self.sim_pane = sim_pane
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
        """The lesson takes the keys (↑ ↓ scroll it, ← → change step); zoomed, nothing does."""
        self.screen.set_focus(None) if self.zoomed else self.lesson.focus()

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
