"""The lesson's reveal on the tutorial screen: the text after `<!-- reveal -->`
(`Step.reveal_md`), shown under the activity once it is answered on this visit.

A prediction's reveal, and a curve plot it `hides`, wait for its result: the moment the line
under the guess names ("the answer shows after 20 simulated s"), not only for the guess. A step
revisited asks again (a prediction says the learner's earlier guess) with its answer hidden, so
nothing answers a question before it is asked.
"""

from __future__ import annotations

from functools import partial

from ..widgets.activity_panel import ActivityPanel
from ..widgets.lesson import LessonMarkdown
from ..widgets.pane import Pane

REVEAL_CONTEXT = 6
"""Lines of the answer (a guess, a verdict) kept in sight above the reveal text."""


class Reveal:
    """The reveal of the step on show, for one tutorial screen."""

    def __init__(self, screen) -> None:
        self.screen = screen
        self.shown = False
        """The reveal is shown (or on its way) on this visit of the step."""

    def hide(self) -> None:
        """A step opens: its reveal waits for its answer."""
        self.shown = False
        self.screen.query_one("#reveal").display = False

    def refill(self, step):
        """The reveal in `step`'s words (its figures arrived): an update to await, or None when
        the reveal is not shown."""
        if not self.shown:
            return None
        return self.screen.query_one("#reveal", LessonMarkdown).update(self.screen.app.words(step.reveal_md))

    def update(self) -> None:
        """Show the reveal once the step's activity has been answered on this visit, and hold
        back the curve plots that answer a prediction until then."""
        screen = self.screen
        step = screen.step
        view = screen.query_one(ActivityPanel).view
        # A plot that answers the prediction (step 7's batch curve) waits for the guess too.
        hidden = step.activity.params.get("hides", ()) if view is not None and not view.answered else ()
        curves = screen.stack.views("curve", make="curve" in step.views)
        held = [curve.held_back for curve in curves]
        for curve in curves:
            curve.hold_back(hidden)
        if held != [curve.held_back for curve in curves]:
            screen.stack.check_sizes()  # a plot shown (or held) takes more (or fewer) lines
        if self.shown or not step.reveal_md:
            return
        if view is None or view.answered:
            self.shown = True
            screen.run_worker(partial(self.show, step), group="reveal")

    async def show(self, step) -> None:
        screen = self.screen
        reveal = screen.query_one("#reveal", LessonMarkdown)
        await reveal.update(screen.app.words(step.reveal_md))
        current = screen.step
        if step is not current and step.figures_pending and step.number == current.number:
            await reveal.update(screen.app.words(current.reveal_md))  # its figures arrived meanwhile
            step = current
        if step is current:
            reveal.display = True
            screen.call_after_refresh(self.into_view)

    def into_view(self) -> None:
        """The reveal's first lines into sight, under the last lines of the answer above it."""
        screen = self.screen
        pane = screen.query_one("#lesson-pane", Pane)
        reveal = screen.query_one("#reveal")
        pane.scroll_to(y=max(0, reveal.virtual_region.y - REVEAL_CONTEXT), animate=False)
