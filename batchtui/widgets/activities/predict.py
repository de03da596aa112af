"""Predict, then run: commit to a guess with a number key, watch, then see guess against result;
after a wrong guess, guess again in place (each wrong choice told why it is tempting and wrong)
or ask for the answer."""

from __future__ import annotations

from functools import partial

from textual.app import ComposeResult
from textual.widgets import Static

from ...keys import shown
from ..lesson import LessonMarkdown
from .base import ActivityView, Goal


class PredictView(ActivityView):
    def __init__(self, predict, saved_guess: int | None = None) -> None:
        super().__init__(id="predict")
        self.predict = predict
        self.saved_guess = saved_guess
        self.committed_at: float | None = None
        self.watched = 0.0
        """Simulated seconds run since the guess (the result comes at `watch_seconds`)."""
        self.revealed = False
        """The run's result is in: the first guess has met it."""
        self.outcome = ""
        """"" (no result yet), "right", "wrong" (guess again) or "shown" (the answer asked for)."""
        self.reading: tuple = (None, None)
        """The frames (this run's, the run beside) the result was read from: a later guess is
        judged against the same reading."""

    @property
    def takes_choices(self) -> bool:
        return self.predict.guess is None or self.outcome == "wrong"

    @property
    def choice_count(self) -> int:
        return len(self.predict.choices)

    @property
    def answered(self) -> bool:
        """The answer is out (a right guess met the result, or the answer was asked for): the
        lesson's reveal and a plot that answers the question wait for it, not for the guess."""
        return self.outcome in ("right", "shown")

    @property
    def give_up_label(self) -> str:
        return "answer" if self.outcome == "wrong" else ""

    def compose(self) -> ComposeResult:
        yield Static("Predict, then run", classes="activity-title", markup=False)
        yield self.markdown(self._question(), id="predict-question")
        earlier = (f"Last time you guessed {self.saved_guess}; guess again. "
                   if self.saved_guess is not None else "")
        yield Static(self.words(f"{earlier}Press the number of your guess; the simulation starts when you do."),
                     id="predict-status", classes="activity-feedback -after-text -info", markup=False)

    def _question(self) -> str:
        choices = "\n".join(f"{i}. {c}" for i, c in enumerate(self.predict.choices, 1))
        return self.words(f"{self.predict.question_md}\n\n{choices}")

    def _say_committed(self, message: str) -> None:
        self._status(f"{message} The answer shows {self.predict.wait_words()}: press + to fast-forward.")

    async def refill(self, predict) -> bool:
        """The figures arrived: the question with them; the guesses made meanwhile stay made
        (the run goes on), a result shown meanwhile is told again with them."""
        made, self.predict = self.predict, predict
        if made.guess is not None:
            message = predict.commit(made.guess)
            for guess in made.tried[1:]:
                predict.again(guess)
            if not self.revealed:
                self._say_committed(message)
                self.bring_into_view(self.query_one("#predict-status"))  # the text above grew
        await self.query_one("#predict-question", LessonMarkdown).update(self._question())
        if self.outcome == "right":
            self._right(predict.tried[-1])
        elif self.outcome == "wrong":
            self._wrong(predict.tried[-1])
        elif self.outcome == "shown":
            self._shown()
        return True

    def choose(self, number: int) -> None:
        if self.outcome == "wrong":
            self._guess_again(number)
            return
        if self.predict.guess is not None:
            return
        try:
            message = self.predict.commit(number)
        except ValueError as exc:
            self._status(str(exc).capitalize() + ".")
            return
        self._say_committed(message)
        self.bring_into_view(self.query_one("#predict-status"))
        self.committed_at = None  # set by the next frame: the run starts now
        self.watched = 0.0
        # The guess counts as it is made: kept (and a right one done) whether or not the learner
        # stays for the result.
        self.post_message(self.Finished(str(number), completed=number == self.predict.answer))
        self.post_message(self.Updated())
        # Run with the setting the question is about: the step's own, the dials moved since put
        # back (step 17 asks about its 512 seats, whatever the seats dial reads), and the
        # prediction's `run` (step 1 asks about 1 request/s). A job is timed from its start, so
        # a job already under way starts over.
        self.post_message(self.RunDials(self.predict.run_dials, beside_start=True, from_start=True,
                                        fresh=self.predict.ends_with_job))

    def update_snapshot(self, snapshot, compare=None) -> None:
        if self.predict.guess is None or self.revealed:
            return
        if self.committed_at is None:
            self.committed_at = snapshot.time
        self.watched = snapshot.time - self.committed_at
        if snapshot.finished or snapshot.time - self.committed_at >= self.predict.watch_seconds:
            self.reveal(snapshot, compare)

    def reveal(self, snapshot, compare=None) -> None:
        """The result is in: the first guess meets the run."""
        self.revealed = True
        self.reading = (snapshot, compare)
        guess = self.predict.guess
        if guess == self.predict.answer:
            self._right(guess)
        else:
            self._wrong(guess)
        self.post_message(self.Updated())

    def _right(self, guess: int) -> None:
        self.outcome = "right"
        self._status(f"Your guess: {guess}. {self.predict.verdict(guess)}", "-correct")
        self._show(self.predict.reveal(*self.reading))

    def _wrong(self, guess: int) -> None:
        self.outcome = "wrong"
        self._status(f"Your guess: {guess}. {self.predict.wrong_words(guess)}", "-wrong")
        again = f"Press another number to guess again, or {shown('answer.give_up')} for the answer."
        reading = self.predict.reading(*self.reading)
        self._show(f"{reading}\n\n{again}" if reading else again)

    def _guess_again(self, number: int) -> None:
        try:
            right = self.predict.again(number)
        except ValueError as exc:
            self._status(str(exc).capitalize() + ".")
            return
        if right:
            self._right(number)
        else:
            self._wrong(number)
        self.post_message(self.Finished(str(number), completed=right))
        self.post_message(self.Updated())

    async def give_up(self) -> None:
        if self.outcome != "wrong":
            return
        self.outcome = "shown"
        self._shown()
        self.post_message(self.Updated())

    def _shown(self) -> None:
        guesses = ", ".join(map(str, self.predict.tried))
        self._status(f"Your guess{'es' if len(self.predict.tried) > 1 else ''}: {guesses}. "
                     f"{self.predict.verdict(self.predict.tried[-1])}", "-info")
        self._show(self.predict.reveal(*self.reading))

    def _status(self, text: str, kind: str | None = None) -> None:
        status = self.query_one("#predict-status", Static)
        if kind is not None:
            for name in ("-info", "-correct", "-wrong"):
                status.set_class(name == kind, name)
        status.update(self.words(text))

    def _show(self, text: str) -> None:
        self.run_worker(partial(self._show_reveal, text), group="reveal")

    async def _show_reveal(self, text: str) -> None:
        if not self.is_attached:
            return
        await self.show_markdown("predict-reveal", text)
        # A step change while the reveal was drawn removes the view: nothing left to show.
        for status in self.query("#predict-status"):
            self.bring_into_view(status, top=True)

    def goal(self) -> Goal:
        n = len(self.predict.choices)
        if self.predict.guess is None:
            return Goal(f"Predict: press 1-{n} for your guess; the run starts when you do", "open", "",
                        (f"Predict: press 1-{n} for your guess",))
        if not self.revealed:
            guess = f"guess {self.predict.guess}"
            if self.predict.ends_with_job:
                return Goal(f"Predict: the answer comes {self.predict.wait_words()}; + fast-forwards",
                            "open", guess, ("Predict: answer when the job ends; + fast-forwards",))
            # The seconds left count down on every frame, with the key that shortens them.
            left = max(0.0, self.predict.watch_seconds - (self.watched or 0.0))
            return Goal(f"Predict: answer in {left:.0f} simulated s; + fast-forwards", "open", guess,
                        (f"Predict: answer in {left:.0f} s; + fast-forwards",))
        if self.outcome == "right":
            tries = len(self.predict.tried)
            return Goal("Predict, then watch the run", "done", "right" if tries == 1 else f"right on try {tries}")
        if self.outcome == "wrong":
            give_up = shown("answer.give_up")
            tried = self.predict.tried
            return Goal(f"Predict: not {tried[-1]}; guess again or {give_up} for the answer", "open",
                        "tried " + ", ".join(map(str, tried)),
                        (f"Predict: guess again (1-{n}) or {give_up} for the answer",
                         f"Predict: 1-{n} again or {give_up} for the answer"),
                        (f"{len(tried)} tried",))
        return Goal("Predict, then watch the run", "answered", f"it was {self.predict.answer}")
