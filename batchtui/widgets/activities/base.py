"""What the activity panel asks of every activity widget."""

from __future__ import annotations

from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.message import Message

from ..lesson import LessonMarkdown


class ActivityView(Vertical):
    """An activity under the lesson text. Subclasses override what they use."""

    DEFAULT_CSS = """
    ActivityView {
        height: auto;
        & > .activity-title { text-style: bold; color: $accent; }
        & > .activity-feedback { height: auto; padding: 0 1; margin-top: 1; }
        & > .activity-feedback.-correct { background: $success-muted; }
        & > .activity-feedback.-wrong { background: $error-muted; }
        & > .activity-feedback.-info { background: $primary-muted; }
        & > .activity-text { margin: 0; padding: 0; background: transparent; }
        & > AnswerBox { margin-top: 1; }
    }
    """

    class Finished(Message):
        """The learner completed the activity; `answer` is what to remember for the step."""

        def __init__(self, answer: str) -> None:
            super().__init__()
            self.answer = answer

    class Updated(Message):
        """What the activity takes changed (a question arrived): number keys, hints."""

    class RunDials(Message):
        """Settings the activity wants the live simulation to run with (dotted paths)."""

        def __init__(self, dials: dict) -> None:
            super().__init__()
            self.dials = dials

    takes_choices = False
    """Number keys pick an answer right now."""
    choice_count = 0
    has_input = False
    hints: tuple[str, ...] = ()
    """Hints that belong to this activity (a drill question's own), shown before the step's."""

    def words(self, text: str) -> str:
        return self.app.words(text)

    def markdown(self, text: str = "", id: str | None = None) -> LessonMarkdown:
        """A Markdown block that follows `--ascii` like the lesson does."""
        return LessonMarkdown(self.words(text), ascii_only=self.app.settings.ascii_only, id=id,
                              classes="activity-text")

    PREPARE_DELAY = 0.1
    """Seconds after the step is on screen before a question that needs simulated runs (or
    numpy) is drawn in a thread: the first frame reaches the terminal first."""

    async def prepare(self, draw, present) -> None:
        """`present(draw())`. In the app, `draw` runs in a thread once the step is on screen;
        tests (no clock running) draw at once, so a screenshot has the result."""
        if not self.app.settings.autorun:
            await present(draw())
            return

        def work() -> None:
            result = draw()
            self.app.call_from_thread(self._present_while_shown, present, result)

        def start() -> None:
            self.run_worker(work, thread=True, group="question", exclusive=True)

        self.call_after_refresh(self.set_timer, self.PREPARE_DELAY, start)

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
