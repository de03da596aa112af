"""Read a table of percentiles and pick, with a number key, what went wrong."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Markdown, Static

from .base import ActivityView, Goal


class ReadView(ActivityView):
    def __init__(self, reading, seed: int) -> None:
        super().__init__(id="read")
        self.reading = reading
        self.seed = seed
        self.question = None
        self.outcome = ""
        """"" (not answered yet), "wrong", "right" or "shown"."""
        self.early: list[int] = []
        """Number keys (0: ctrl+d) typed while the first question was drawn (in one burst with
        the step key): acted on, in order, once it shows."""

    @property
    def takes_choices(self) -> bool:
        return self.question is not None and not self.question.done

    @property
    def choices_coming(self) -> bool:
        return self.question is None

    @property
    def choice_count(self) -> int:
        return len(self.question.choices) if self.question is not None else 0

    def compose(self) -> ComposeResult:
        yield Static("Read the percentiles", classes="activity-title", markup=False)
        yield self.markdown("", id="read-table")
        yield Static("", id="read-feedback", classes="activity-feedback -after-text", markup=False)

    async def on_mount(self) -> None:
        # Two short simulated runs build the table: drawn once the step is on screen.
        await self.query_one("#read-table", Markdown).update(self.words("Running the two simulations..."))
        seed = self.seed
        await self.prepare(lambda: self.reading.new_question(seed), self._first_question)

    async def _first_question(self, question) -> None:
        if not self.is_attached or self.question is not None:
            return  # the learner left the step, or asked for another question meanwhile
        await self._show_question(question)
        early, self.early = self.early, []
        for number in early:
            if number:
                self.choose(number)
            else:
                await self.give_up()
        self.post_message(self.Updated())

    async def _ask(self) -> None:
        await self._show_question(self.reading.new_question(self.seed))

    async def _show_question(self, question) -> None:
        self.question = question
        choices = "\n".join(f"{i}. {c}" for i, c in enumerate(self.question.choices, 1))
        await self.query_one("#read-table", Markdown).update(self.words(
            f"{self.question.table_md}\n\nWhat does it tell you? Press its number.\n\n{choices}"))
        self.query_one("#read-feedback").display = False

    def choose(self, number: int) -> None:
        if self.question is None:
            self.early.append(number)
            return
        if not self.takes_choices:
            return
        feedback = self.question.check(number)
        view = self.query_one("#read-feedback", Static)
        view.display = True
        view.update(self.words(feedback.message))
        view.set_class(feedback.correct, "-correct")
        view.set_class(not feedback.correct, "-wrong")
        self.bring_into_view(view)
        self.outcome = "right" if feedback.correct else "wrong"
        if feedback.correct:
            self.post_message(self.Finished(str(number)))
        else:
            self.post_message(self.Updated())

    async def give_up(self) -> None:
        if self.question is None:
            self.early.append(0)
            return
        if self.question.done:
            return
        view = self.query_one("#read-feedback", Static)
        view.display = True
        view.set_class(False, "-correct")
        view.set_class(False, "-wrong")
        view.update(self.words(self.question.give_up()))
        self.bring_into_view(view)
        self.outcome = "shown"

    async def new_question(self) -> None:
        self.seed += 1
        self.outcome = ""
        await self._ask()

    @property
    def answered(self) -> bool:
        return self.outcome in ("right", "shown")

    def goal(self) -> Goal:
        n = len(self.question.choices) if self.question is not None else 3
        ask = f"Read the table: press 1-{n} for what it tells you"
        shorter = (f"Read the table: press 1-{n}",)
        if self.outcome == "right":
            return Goal(ask, "done", "right", shorter)
        if self.outcome == "shown":
            return Goal(ask, "answered", "answer shown", shorter)
        return Goal(ask, "open", "try again" if self.outcome == "wrong" else "", shorter)
