"""A step opened as its draft on the tutorial screen, filled in once its figures are computed.

A step whose figures the simulator has not computed yet opens as a draft (its figures read
"…"), filled beside the app once it is drawn: the first frame does not wait for numpy and the
engine, nor a step change for its figures. What the learner did meanwhile (a guess, a hint
shown) stays.
"""

from __future__ import annotations

import asyncio
from functools import partial

from textual.widgets import Input

from sim.errors import SimError

from ..activity_kinds import activity_view, refill
from ..widgets.activity_panel import ActivityPanel
from ..widgets.lesson import LessonMarkdown


class Drafts:
    """Fills the draft on show of one tutorial screen."""

    def __init__(self, screen) -> None:
        self.screen = screen

    async def fill_later(self, draft, index: int, delay: float) -> None:
        """Compute step `index`'s figures in a thread, `delay` s after it is drawn."""
        await self.screen.settings.clock.in_background(
            self.screen, partial(self.filled, index), partial(self.ready, draft), delay=delay, group="figures")

    def filled(self, index: int):
        """Step `index` with its figures computed (in a thread: the simulator runs), or the error
        that stopped them."""
        try:
            return self.screen.steps[index]
        except SimError as exc:
            return exc

    def ready(self, draft, filled) -> None:
        """A draft's figures arrived: put them in, once nothing else is changing the step."""
        if draft is self.screen.shown:
            self.screen.run_worker(partial(self.fill_in, draft, filled), group="figures-in")

    async def fill_in(self, draft, filled) -> None:
        """The lesson text, hints, activity wording and reveal of the step on show with its
        figures."""
        screen = self.screen
        async with screen.changing:
            if draft is not screen.shown or not screen.is_attached:
                return
            if isinstance(filled, SimError):
                screen.say(f"Step {draft.number}'s figures cannot be computed: {filled}", error=True)
                return
            screen.shown = filled
            words = screen.app.words
            panel = screen.query_one(ActivityPanel)
            with screen.app.batch_update():
                updates = [screen.query_one("#lesson", LessonMarkdown).update(words(filled.body_md))]
                # The activity with its figures: in the view on show, which keeps what the
                # learner did (a guess made as the step opened), else in a new view, unless the
                # learner is typing in it.
                if filled.activity != draft.activity and not await refill(panel, filled) \
                        and not isinstance(screen.focused, Input):
                    progress = screen.app.progress
                    view = activity_view(filled, progress.answers.get(filled.number),
                                         filled.number in progress.completed, seed=filled.number)
                    updates.append(panel.show(view))
                refill_reveal = screen.reveal.refill(filled)
                if refill_reveal is not None:
                    updates.append(refill_reveal)
                await asyncio.gather(*updates)
            if not screen.is_attached:  # the app closed while the widgets were updated
                return
            screen.question.set_hints(keep_shown=True)
            screen.update_goal()
            screen.update_keys()
