"""A drill's keys land on the question on show: keys typed in one burst with ctrl+r, before a
question is drawn (some drills measure simulated runs first), are for the question ctrl+r asked."""

from __future__ import annotations

from manual_clock import ManualClock
from batchtui.clock import call
from batchtui.widgets.activities.drill import DrillView
from tests import shared_steps

DRILL = 2


class HeldQuestions(ManualClock):
    """The test clock, except that drill questions are drawn only at `release()`, in the order
    asked (a draw that takes longer than the keys after it)."""

    def __init__(self) -> None:
        self.held: list = []

    async def in_background(self, widget, work, done, delay: float = 0.0, group: str = "background") -> None:
        if group == "question":
            self.held.append((work, done))
        else:
            await super().in_background(widget, work, done, delay, group)

    async def release(self) -> None:
        """Draw what is held, and what those draws ask for next, until nothing is."""
        while self.held:
            work, done = self.held.pop(0)
            await call(done, work())


async def test_an_answer_typed_with_ctrl_r_before_the_first_question_is_drawn_is_checked_against_the_next(make_app):
    """tmux, step 1, one write of n ctrl+r Tab 123 Enter: the first question, drawn after the
    keys, took the Enter meant for the one ctrl+r asked (the goal line said "try again" under a
    question nothing was checked against), which then showed unchecked."""
    clock = HeldQuestions()
    app = make_app(list(shared_steps.lessons()), start_step=DRILL, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+r", "tab", *"123", "enter")
        await pilot.pause()
        assert clock.held and app.screen.query_one(DrillView).question is None
        await clock.release()
        await pilot.pause()
        view = app.screen.query_one(DrillView)
        first, second = view.drill.new_question(DRILL), view.question
        assert second.prompt_md != first.prompt_md and view.asked == 2
        assert second.attempts == 1 and not view.drawing  # (checked: 123 is no answer of either)
        assert view.query_one("#drill-feedback").display
