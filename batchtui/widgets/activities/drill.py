"""A drill: a question with numbers drawn from a seed, a typed answer, feedback, derivation."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.widgets import Input, Markdown, Static

from ...keys import shown
from ..answer_box import AnswerBox
from .base import ActivityView, Goal


class DrillView(ActivityView):
    """Enter checks the answer; ctrl+d shows the worked answer; ctrl+r asks a new question."""

    has_input = True

    def __init__(self, drill, seed: int, saved_answer: str | None = None,
                 drafts: dict[int, str] | None = None) -> None:
        super().__init__(id="drill")
        self.drill = drill
        self.seed = seed
        self.saved_answer = saved_answer
        self.typed_before = dict(drafts or {})
        """What the learner had typed in the box, not entered, when they last left each question
        (by `asked`; left the step, quit, or asked the next): in the box from the moment the
        question is asked again, and typing goes on from it. (Read as the view was made: a
        question left on this visit is not asked again on it.)"""
        self.question = None
        """The question on show (None until the first is drawn)."""
        self._draws = 0
        """How many of the step's questions were drawn on this visit (`_draw_next`), from `seed`
        on; `_drawn_prompt` is the last one's."""
        self._drawn_prompt: str | None = None
        self._in_flight = False
        """A question is being drawn in a thread (the next waits for it)."""
        self.last_wrong = False
        self.drawing = True
        """A question is being drawn (the first, or one ctrl+r asked for): Enter and ctrl+d wait
        for it."""
        self.waiting: list[tuple[str, str]] = []
        """Enter (with the box's text as it was) and ctrl+d, come while the question was drawn,
        in the order typed: done once it shows (`_drawn`)."""

    def compose(self) -> ComposeResult:
        yield Static(self.words(f"Drill: {self.drill.title}"), classes="activity-title", markup=False)
        yield self.markdown("", id="drill-prompt")
        yield AnswerBox(self.typed_before.get(self.asked, ""), placeholder="your answer, then Enter", id="drill-answer")
        yield Static("", id="drill-feedback", classes="activity-feedback", markup=False)

    async def on_mount(self) -> None:
        # Some drills measure short simulated runs to set their numbers: the first question is
        # drawn once the step is on screen.
        await self.query_one("#drill-prompt", Markdown).update(self.words("Drawing a question..."))
        await self._draw_next()

    async def _draw_next(self) -> None:
        """Draw the step's next question (the first from `seed`), in a thread once a frame is
        out (some drills measure simulated runs), one at a time: each reads as a new question
        beside the one before it (`_draw`), so the questions of a visit are the same every
        visit. Shown if it is the one asked (`asked`); if ctrl+r asked past it meanwhile, the
        next is drawn instead: keys typed after ctrl+r, Enter too, are for the question it asked."""
        self._in_flight = True
        number, old = self._draws + 1, self._drawn_prompt
        seed = self.seed if number == 1 else self.seed + 1

        async def drawn(result) -> None:
            self._in_flight = False
            self.seed, question = result
            self._draws, self._drawn_prompt = number, question.prompt_md
            if number < self.asked:
                await self._draw_next()
            else:
                await (self._first_question if number == 1 else self._next_question)(question)

        await self.prepare(lambda: self._draw(seed, old), drawn)

    async def _first_question(self, question) -> None:
        # What the learner typed (on an earlier visit, or while the question was drawn) stays:
        # it can be for no other question; else the answer saved on an earlier visit.
        await self._show_question(question, keep_typed=True)
        box = self.query_one(Input)
        if self.saved_answer and not box.value and not self.waiting:
            box.value = self.saved_answer
        await self._drawn()

    def _draw(self, seed: int, old: str | None):
        """(seed, question) for `seed`, or the next seed's if it reads as `old`, the question
        before it. (In a thread: it changes nothing of the view's.)"""
        question = self.drill.new_question(seed)
        for _ in range(5):  # a retry should read as a new question, not the same draw again
            if question.prompt_md != old:
                break
            seed += 1
            question = self.drill.new_question(seed)
        return seed, question

    async def _show_question(self, question, keep_typed: bool = False) -> None:
        self.question = question
        self.hints = self.question.hints
        unit = self.question.unit
        await self.query_one("#drill-prompt", Markdown).update(self.words(
            f"{self.question.prompt_md} Answer in **{unit}**, within {self.question.tolerance_text}."))
        self.hide_markdown("drill-derivation")
        self._feedback("", None)
        if not keep_typed:
            self.query_one(Input).value = ""

    def _feedback(self, message: str, correct: bool | None) -> None:
        feedback = self.query_one("#drill-feedback", Static)
        feedback.update(self.words(message))
        feedback.display = bool(message)
        feedback.set_class(correct is True, "-correct")
        feedback.set_class(correct is False, "-wrong")
        if message:
            self.bring_into_view(feedback)

    @on(Input.Submitted, "#drill-answer")
    async def _check(self, event: Input.Submitted) -> None:
        event.stop()
        if self.drawing:
            # Keys arrive in bursts: an answer typed and entered before its question shows is
            # checked once it does, not dropped.
            self.waiting.append(("enter", event.value))
            self._feedback("The question is still being drawn: your answer is checked once it shows.", None)
            return
        await self._check_answer(event.value)

    async def _check_answer(self, value: str) -> None:
        if self.question is None or self.question.over:
            return
        feedback = self.question.check(value)
        self._feedback(feedback.message, feedback.correct)
        self.last_wrong = not feedback.correct
        if feedback.show_derivation:
            await self._show_derivation()
            self.post_message(self.Finished(value, completed=bool(self.question.solved)))
        else:
            self.post_message(self.Updated())

    async def _drawn(self) -> None:
        """A question is on show: check an answer entered while it was drawn, show the worked
        answer ctrl+d asked for meanwhile, in the order typed."""
        self.drawing = False
        waiting, self.waiting = self.waiting, []
        for key, value in waiting:
            if key == "enter":
                await self._check_answer(value)
            else:
                await self.give_up()
        self.post_message(self.Updated())

    async def _show_derivation(self) -> None:
        derivation = await self.show_markdown("drill-derivation",
                                              "**Worked answer**\n\n" + self.question.derivation_md)
        self.bring_into_view(derivation)
        if self.question.run_dials:
            self.post_message(self.RunDials(self.question.run_dials, fresh=True))

    async def give_up(self) -> None:
        if self.drawing:
            self.waiting.append(("give_up", ""))
            self._feedback("The question is still being drawn: its worked answer shows once it does.", None)
            return
        if self.question is None or self.question.over:
            return
        self.question.give_up()
        # (the worked answer is right under it)
        self._feedback(f"{shown('answer.new_question')} asks a new question.", None)
        await self._show_derivation()

    async def new_question(self) -> None:
        self.asked += 1
        self.last_wrong = False
        # The old answer goes now (its draft kept by the lesson pane first), the new question's
        # draft comes in; what is typed while the new question is drawn is for it, in the box
        # from now (not as it comes: an Esc typed meanwhile keeps the keys on the lesson).
        box = self.query_one(Input)
        box.value = self.typed_before.get(self.asked, "")
        box.focus()
        self.drawing, self.waiting = True, []
        if not self._in_flight:
            await self._draw_next()

    async def _next_question(self, question) -> None:
        await self._show_question(question, keep_typed=True)
        await self._drawn()

    @property
    def answered(self) -> bool:
        return self.question is not None and self.question.over

    @property
    def draft(self) -> str | None:
        if self.answered:
            return ""  # (what the box holds was entered)
        found = self.query("#drill-answer")
        return found.first(Input).value if found else None

    def goal(self) -> Goal:
        unit = f" in {self.question.unit}" if self.question is not None else ""
        ask = f"Drill: type your answer{unit} in the box (tab), Enter"
        shorter = (f"Drill: answer{unit} (tab), Enter", "Drill: answer (tab), Enter")
        if self.question is None or not self.question.over:
            return Goal(ask, "open", "try again" if self.last_wrong else "", shorter)
        if self.question.solved:
            return Goal(ask, "done", "right", shorter)
        return Goal(ask, "answered", "worked answer shown", shorter)
