"""Predict, then run: commit to a guess with a number key, watch, then see guess against result."""

from __future__ import annotations

from functools import partial

from textual.app import ComposeResult
from textual.widgets import Static

from .base import ActivityView, Goal


class PredictView(ActivityView):
    def __init__(self, predict, saved_guess: int | None = None) -> None:
        super().__init__(id="predict")
        self.predict = predict
        self.saved_guess = saved_guess
        self.committed_at: float | None = None
        self.watched = 0.0
        """Simulated seconds run since the guess (the answer comes at `watch_seconds`)."""
        self.revealed = False

    @property
    def takes_choices(self) -> bool:
        return self.predict.guess is None

    @property
    def choice_count(self) -> int:
        return len(self.predict.choices)

    @property
    def answered(self) -> bool:
        """The result is in (`reveal`): the lesson's reveal and a plot that answers the question
        wait for the moment the line under the guess names, not only for the guess."""
        return self.revealed

    def compose(self) -> ComposeResult:
        yield Static("Predict, then run", classes="activity-title", markup=False)
        choices = "\n".join(f"{i}. {c}" for i, c in enumerate(self.predict.choices, 1))
        yield self.markdown(self.words(f"{self.predict.question_md}\n\n{choices}"), id="predict-question")
        earlier = (f"Last time you guessed {self.saved_guess}; guess again. "
                   if self.saved_guess is not None else "")
        yield Static(self.words(f"{earlier}Press the number of your guess; the simulation starts when you do."),
                     id="predict-status", classes="activity-feedback -info", markup=False)

    def choose(self, number: int) -> None:
        if self.predict.guess is not None:
            return
        try:
            message = self.predict.commit(number)
        except ValueError as exc:
            self.query_one("#predict-status", Static).update(self.words(str(exc).capitalize() + "."))
            return
        self.query_one("#predict-status", Static).update(self.words(
            f"{message} The answer shows {self.predict.wait_words()}: press + to fast-forward."))
        self.bring_into_view(self.query_one("#predict-status"))
        self.committed_at = None  # set by the next frame: the run starts now
        self.watched = 0.0
        self.post_message(self.Updated())
        # Run with the setting the question is about (step 1 asks about 1 request/s), or as is.
        self.post_message(self.RunDials(self.predict.run_dials, beside_start=True))

    def update_snapshot(self, snapshot, compare=None) -> None:
        if self.predict.guess is None or self.revealed:
            return
        if self.committed_at is None:
            self.committed_at = snapshot.time
        self.watched = snapshot.time - self.committed_at
        if snapshot.finished or snapshot.time - self.committed_at >= self.predict.watch_seconds:
            self.reveal(snapshot, compare)

    def reveal(self, snapshot, compare=None) -> None:
        self.revealed = True
        right = self.predict.guess == self.predict.answer
        status = self.query_one("#predict-status", Static)
        status.set_class(False, "-info")
        status.set_class(right, "-correct")
        status.set_class(not right, "-wrong")
        status.update(self.words(f"Your guess: {self.predict.guess}."))
        self.run_worker(partial(self._show_reveal, self.predict.reveal(self.predict.guess, snapshot, compare)),
                        group="reveal")
        self.post_message(self.Finished(str(self.predict.guess), completed=right))

    async def _show_reveal(self, text: str) -> None:
        await self.show_markdown("predict-reveal", text)
        self.bring_into_view(self.query_one("#predict-status"), top=True)

    def goal(self) -> Goal:
        n = len(self.predict.choices)
        if self.predict.guess is None:
            return Goal(f"Predict: press 1-{n} for your guess; the run starts when you do")
        if not self.revealed:
            if self.predict.ends_with_job:
                return Goal(f"Predict: the answer comes {self.predict.wait_words()}; + fast-forwards",
                            "open", f"guess {self.predict.guess}")
            # The seconds left count down on every frame, with the key that shortens them.
            left = max(0.0, self.predict.watch_seconds - (self.watched or 0.0))
            return Goal(f"Predict: answer in {left:.0f} simulated s; + fast-forwards",
                        "open", f"guess {self.predict.guess}")
        if self.predict.guess == self.predict.answer:
            return Goal("Predict, then watch the run", "done", "right")
        return Goal("Predict, then watch the run", "answered", f"it was {self.predict.answer}")
