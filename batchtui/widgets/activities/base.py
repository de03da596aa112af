"""What the activity panel asks of every activity widget."""

from __future__ import annotations

from typing import NamedTuple

from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.message import Message

from ..lesson import LessonMarkdown


class Goal(NamedTuple):
    """What the step asks of the learner right now, for the goal line."""

    ask: str
    state: str = "open"
    """"open", "answered" (a wrong prediction, a worked answer shown) or "done"."""
    note: str = ""
    shorter: tuple[str, ...] = ()
    """Shorter forms of `ask`, longest first, for a narrow line: each still names the keys."""
    shorter_notes: tuple[str, ...] = ()
    """Shorter forms of `note`, longest first, tried after every form of `ask` with the whole
    note."""


class ActivityView(Vertical):
    """An activity under the lesson text. Subclasses override what they use."""

    DEFAULT_CSS = """
    ActivityView {
        height: auto;
        & > .activity-title { text-style: bold; color: $accent; }
        & > .activity-feedback { height: auto; padding: 0 1; margin-top: 1; }
        /* Under a block of text, whose last paragraph leaves a blank line already. */
        & > .activity-feedback.-after-text { margin-top: 0; }
        & > .activity-feedback.-correct { background: $success-muted; }
        & > .activity-feedback.-wrong { background: $error-muted; }
        & > .activity-feedback.-info { background: $primary-muted; }
        & > .activity-text { margin: 0; padding: 0; background: transparent; }
        & > AnswerBox { margin-top: 0; }  /* under the question, whose paragraph leaves a line */
    }
    """

    class Finished(Message):
        """The learner answered; `answer` is what to remember for the step, `completed` whether
        the step counts as done (a wrong prediction is answered, not done)."""

        def __init__(self, answer: str, completed: bool = True) -> None:
            super().__init__()
            self.answer = answer
            self.completed = completed

    class Updated(Message):
        """What the activity takes changed (a question arrived): number keys, hints."""

    class RunDials(Message):
        """Settings the activity wants the live simulation to run with (dotted paths).
        `beside_start`: run the step's starting setting beside them, as "before". `fresh`: a new
        run from time zero with them, so no figure on screen mixes it with the run before
        (a drill's check against the mean batch). `from_start`: the step's other dials go back
        to where the step began (a break-it's "show me" breaks it from there). `words`: the
        line that says what is run, in place of the settings listed."""

        def __init__(self, dials: dict, beside_start: bool = False, fresh: bool = False,
                     words: str = "", from_start: bool = False) -> None:
            super().__init__()
            self.dials = dials
            self.beside_start = beside_start
            self.fresh = fresh
            self.words = words
            self.from_start = from_start

    takes_choices = False
    """Number keys pick an answer right now."""
    done_before = False
    """The step was completed on an earlier visit: asked again, it stays done (the goal line says
    so, as the table of contents does)."""
    answered = False
    """The learner has answered (a prediction's result shown, a drill checked right or its answer
    shown, a reading answered, a challenge broken): the lesson's reveal text may show."""
    choice_count = 0
    choices_coming = False
    """Number keys are for a question still being drawn: held until it shows (`choose`)."""
    has_input = False
    hints: tuple[str, ...] = ()
    """Hints that belong to this activity (a drill question's own), shown before the step's."""
    asked = 1
    """Which of the step's questions is on show (or being drawn) on this visit: 1 for the first,
    one more for each that ctrl+r asked. A draft is kept for it (`Progress.drafts`)."""
    give_up_label = ""
    """What ctrl+d does here now, for the footer when no text box has focus ("show me" on a
    break-it); "" leaves it out."""

    def words(self, text: str) -> str:
        return self.app.words(text)

    def markdown(self, text: str = "", id: str | None = None) -> LessonMarkdown:
        """A Markdown block that follows `--ascii` like the lesson does."""
        return LessonMarkdown(self.words(text), ascii_only=self.app.settings.ascii_only, id=id,
                              classes="activity-text")

    async def show_markdown(self, id: str, text: str) -> LessonMarkdown:
        """The Markdown block `id` showing `text`; made (at the end of the view) the first time
        it is needed, since a Markdown widget costs a step change several milliseconds."""
        found = self.query(f"#{id}")
        if found:
            view = found.first(LessonMarkdown)
            await view.update(self.words(text))
        else:
            view = self.markdown(text, id=id)
            await self.mount(view)
        view.display = True
        return view

    def hide_markdown(self, id: str) -> None:
        for view in self.query(f"#{id}"):
            view.display = False

    PREPARE_DELAY = 0.1
    """Seconds after the step is on screen before a question that needs simulated runs (or
    numpy) is drawn in a thread: the first frame reaches the terminal first."""

    async def prepare(self, draw, present) -> None:
        """`present(draw())`, with `draw` run beside the app (the app's clock decides how: in a
        thread once the step is on screen; at once under a test's manual clock). The result is
        dropped if this view has gone meanwhile."""

        async def present_while_shown(result) -> None:
            await self._present_while_shown(present, result)

        await self.app.settings.clock.in_background(self, draw, present_while_shown, self.PREPARE_DELAY,
                                                    "question")

    async def _present_while_shown(self, present, result) -> None:
        # This runs in a task of its own: the learner may leave the step or quit (and this view
        # be removed, children first) before or while it runs. Then there is nothing left to
        # show it in. (`display` turns False as soon as a removal starts.)
        def gone() -> bool:
            return not (self.is_attached and self.display)

        if gone():
            return
        try:
            await present(result)
        except NoMatches:
            if not gone():
                raise

    def bring_into_view(self, widget, top: bool = False) -> None:
        """Scroll the lesson pane to `widget` once its new content is laid out (feedback and
        answers appear under the question, often below the fold at 80x24)."""
        self.call_after_refresh(widget.scroll_visible, top=top, animate=False)

    def update_snapshot(self, snapshot, compare=None) -> None:
        """A new frame of the live simulation."""

    def choose(self, number: int) -> None:
        """A number key."""

    async def give_up(self) -> None:
        """Show the worked answer."""

    async def new_question(self) -> None:
        """Another question of the same kind, if the activity has questions."""

    async def scenario_changed(self, scenario) -> None:
        """A dial changed the live scenario."""

    async def refill(self, activity) -> bool:
        """The step's figures arrived (`QuestionPane.fill_in`): show `activity`, the same activity
        with them, in place, keeping what the learner did with this one. False if this view
        does not: it is then made again from `activity` (unless the learner is typing in it)."""
        return False

    @property
    def draft(self) -> str | None:
        """What is typed in this view's answer box and not entered as an answer yet ("": nothing);
        None if the view has no box, or cannot tell."""
        return None

    def goal(self) -> Goal | None:
        """What this activity asks now and how far the learner is; None: nothing to ask."""
        return None
