"""The lesson pane: the step's text, its hints (`h`), its activity and the reveal under it.

The screen gives the pane the step on show (`step`: the one place it is held) and the activity
view to hold; the pane keeps what is its own: which hints are in sight, a draft's figures filled
in (`fill_in`), the answers given (each recorded in the learner's progress as the activity posts
it, the keys back from the answer box; ctrl+d and ctrl+r), what the answer box held, not entered,
as the question changed (its draft, kept in the progress for that question: `keep_draft`),
and whether the reveal (the text after `<!-- reveal -->`, `Step.reveal_md`) is shown. The reveal
waits for the activity's answer on this visit, so nothing answers a question before it is asked; a
step revisited asks again with its answer hidden.
"""

from __future__ import annotations

import asyncio
from functools import partial

from textual.widgets import Input

from sim.errors import SimError

from ..activity_kinds import refill, view_for
from ..keys import BY_ID, display
from .activities.base import ActivityView
from .activity_panel import ActivityPanel
from .hint_box import HintBox
from .lesson import LessonMarkdown
from .pane import Pane

REVEAL_CONTEXT = 6
"""Lines of the answer (a guess, a verdict) kept in sight above the reveal text."""


class QuestionPane(Pane):
    """Lesson text, hints, the activity panel and the reveal, scrolled as one."""

    def __init__(self, changing: asyncio.Lock | None = None, *, ascii_only: bool = False,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.changing = changing or asyncio.Lock()
        """Held while the step or its activity changes (the screen's, shared with its step
        openings): a key and a step change arriving together take turns."""
        self.ascii_only = ascii_only
        self._step = None
        self.reveal_shown = False
        """The reveal is shown (or on its way) on this visit of the step."""

    def compose(self):
        yield LessonMarkdown(id="lesson", ascii_only=self.ascii_only)
        yield HintBox(id="hints")
        yield ActivityPanel(id="activity")
        yield LessonMarkdown(id="reveal", ascii_only=self.ascii_only)

    @property
    def step(self):
        """The step on show (given by the screen: a draft until its figures are filled in;
        None until the first opens). Given another, the pane keeps what the answer box held for
        the one left, not entered, in the learner's progress (`keep_draft`), and saves it."""
        return self._step

    @step.setter
    def step(self, step) -> None:
        # Saved here: a step's figures arriving swap in the same step, which nothing else saves.
        self.save_draft()
        self._step = step

    @property
    def activity(self) -> ActivityPanel:
        return self.query_one(ActivityPanel)

    @property
    def lesson(self) -> LessonMarkdown:
        return self.query_one("#lesson", LessonMarkdown)

    @property
    def answered(self) -> bool:
        """The step's activity is answered on this visit (or it has none)."""
        view = self.activity.view
        return view is None or view.answered

    def words(self, text: str) -> str:
        return self.app.words(text)

    async def show_step(self, view) -> None:
        """The text of `step` (the one on show) and `view`, its activity, from the top; its
        hints hidden and its reveal waiting for the answer."""
        step = self.step
        await asyncio.gather(self.lesson.update(self.words(step.body_md)), self.activity.show(view))
        self.scroll_home(animate=False)
        self.set_hints()
        self.reveal_shown = False
        self.query_one("#reveal").display = False

    # -- a draft's figures
    async def fill_in(self, draft, filled, progress) -> str | None:
        """The step on show, `draft` (its figures "…"), becomes `filled` (or the `SimError` that
        stopped them), once nothing else is changing the step: the lesson text, the activity's
        wording (in the view on show, which keeps what the learner did: a guess, a hint shown)
        and the reveal. Returns what to say ("" once filled), or None if `draft` was left."""
        async with self.changing:
            if draft is not self.step or not self.is_attached:
                return None
            if isinstance(filled, SimError):
                return f"Step {draft.number}'s figures cannot be computed: {filled}"
            self.step, panel = filled, self.activity
            with self.app.batch_update():
                updates = [self.lesson.update(self.words(filled.body_md))]
                # In a new view only if the one on show cannot take them, and not while the learner types.
                if filled.activity != draft.activity and not await refill(panel, filled) \
                        and not isinstance(self.screen.focused, Input):
                    updates.append(panel.show(view_for(filled, progress)))
                if (refill_reveal := self.refill_reveal()) is not None:
                    updates.append(refill_reveal)
                await asyncio.gather(*updates)
            if self.is_attached:  # (not if the app closed while the widgets were updated)
                self.set_hints(keep_shown=True)
            return ""

    # -- answers
    def on_activity_view_finished(self, message: ActivityView.Finished) -> None:
        """The learner answered: recorded, and the keys back from the answer box; the screen
        hears of it next (the goal and footer follow)."""
        self.keep_draft(self.app.progress)  # (entered: the question's draft no longer)
        self.app.record_answer(self.step.number, message.answer, completed=message.completed)
        self.keys_back()

    def keep_draft(self, progress) -> bool:
        """What is typed in the answer box and not entered kept in `progress` (the learner's) as
        the draft of the question on show, before it goes (a step change, a quit, ctrl+r's next
        question): True if that changed it."""
        if not self.is_attached:
            return False
        view, step = self.activity.view, self.step
        if view is None or step is None or (text := view.draft) is None:
            return False
        return progress.keep_draft(step.number, text, view.asked)

    def save_draft(self) -> None:
        """`keep_draft` in the learner's progress, saved if that changed it."""
        if self.keep_draft(self.app.progress):
            self.app.save_progress()

    def keys_back(self) -> None:
        """The answer is in: the plain keys (space, +, -, .) go to the simulation again."""
        if isinstance(self.screen.focused, Input):
            self.focus()

    async def give_up(self) -> None:
        """ctrl+d: the worked answer (a break-it's "show me"); the keys back from the box (a
        reading answered this way takes no more number keys)."""
        async with self.changing:
            await self.activity.give_up()
            self.keys_back()

    async def new_question(self) -> None:
        """ctrl+r: another question of the same kind, with its own hints (a reading question
        takes number keys again)."""
        async with self.changing:
            self.save_draft()  # (the box is the next question's now)
            await self.activity.new_question()
            self.set_hints()

    # -- hints
    def on_activity_view_updated(self, message: ActivityView.Updated) -> None:
        """A question arrived (a drill's own hints come first); the screen hears of it next."""
        self.set_hints()

    def set_hints(self, keep_shown: bool = False) -> None:
        """The hints of the step on show; `keep_shown`: those already shown stay shown."""
        # A drill question's own hints (with its numbers) come before the step's general ones.
        hints = self.activity.hints + tuple(self.step.hints)
        self.query_one(HintBox).set_hints(tuple(self.words(h) for h in hints), keep_shown)

    def next_hint(self) -> str:
        """`h`: the next hint, brought into sight once laid out; "" if one was shown, else what
        to say: no (more) hints, and the key that shows the answer if the activity has one."""
        if not self.query_one(HintBox).reveal_next():
            words = "This step has no hints." if not self.step.hints else "No more hints for this step."
            show_me = self.activity.give_up_label
            if show_me:  # after the hints, the key that shows it
                words += f" {display(BY_ID['answer.give_up'].keys, self.ascii_only)}: {show_me}."
            return words
        # Once laid out, bring the new hint into sight wherever the text was scrolled to.
        self.call_after_refresh(self.show_hint)
        return ""

    def show_hint(self) -> None:
        self.scroll_to_widget(self.query_one(HintBox), animate=False)

    # -- the reveal
    def refill_reveal(self):
        """The reveal in the words of the step on show (its figures arrived): an update to
        await, or None when the reveal is not shown."""
        if not self.reveal_shown:
            return None
        return self.query_one("#reveal", LessonMarkdown).update(self.words(self.step.reveal_md))

    def update_reveal(self) -> None:
        """Show the reveal once the step's activity has been answered on this visit."""
        step = self.step
        if self.reveal_shown or not step.reveal_md:
            return
        if self.answered:
            self.reveal_shown = True
            self.run_worker(partial(self.show_reveal, step), group="reveal")

    async def show_reveal(self, step) -> None:
        reveal = self.query_one("#reveal", LessonMarkdown)
        await reveal.update(self.words(step.reveal_md))
        current = self.step
        if step is not current and step.figures_pending and step.number == current.number:
            await reveal.update(self.words(current.reveal_md))  # its figures arrived meanwhile
            step = current
        if step is current:
            reveal.display = True
            self.call_after_refresh(self.reveal_into_view)

    def reveal_into_view(self) -> None:
        """The reveal's first lines into sight, under the last lines of the answer above it."""
        reveal = self.query_one("#reveal")
        self.scroll_to(y=max(0, reveal.virtual_region.y - REVEAL_CONTEXT), animate=False)
