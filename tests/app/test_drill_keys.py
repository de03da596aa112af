"""A drill's keys land on the question they were typed for: keys in one burst with ctrl+r,
before a question is drawn (some drills measure simulated runs first), are for the question
ctrl+r asked; Enter and ctrl+d typed before it shows act on it once it does, Enter on what the
box held then."""

from __future__ import annotations

from batchtui.widgets.activities.drill import DrillView
from batchtui.widgets.answer_box import AnswerBox
from tests import shared_steps
from tests.app.test_activities import Held

DRILL = 2


async def test_an_answer_typed_with_ctrl_r_before_the_first_question_is_drawn_is_checked_against_the_next(make_app):
    """tmux, step 1, one write of n ctrl+r Tab 123 Enter (or n Tab ctrl+r 123 Enter): the first
    question, drawn after the keys, took the Enter meant for the one ctrl+r asked (the goal line said "try again" under a
    question nothing was checked against), which then showed unchecked."""
    clock = Held("question")
    app = make_app(list(shared_steps.lessons()), start_step=DRILL, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", "ctrl+r", *"123", "enter")
        await pilot.pause()
        assert clock.held and app.screen.query_one(DrillView).question is None
        await clock.release(pilot)
        await pilot.pause()
        view = app.screen.query_one(DrillView)
        first, second = view.drill.new_question(DRILL), view.question
        assert second.prompt_md != first.prompt_md and view.asked == 2
        assert second.attempts == 1 and not view.drawing  # (checked: 123 is no answer of either)
        assert view.query_one("#drill-feedback").display


async def test_ctrl_d_before_the_question_is_drawn_shows_its_worked_answer_once_it_is(make_app):
    """tmux, step 15, one write of n ctrl+d: step 16's question takes 0.7 s to draw (its curve's
    runs) and the ctrl+d, come before it, did nothing (the goal still "open")."""
    clock = Held("question")
    app = make_app(list(shared_steps.lessons()), start_step=DRILL, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", *"1", "ctrl+d", *"2")
        await pilot.pause()
        assert app.screen.query_one(DrillView).question is None
        await clock.release(pilot)
        await pilot.pause()
        view = app.screen.query_one(DrillView)
        assert view.question.gave_up and view.answered and view.goal().state == "answered"
        assert view.query_one("#drill-derivation").display
        assert DRILL not in app.progress.completed and app.progress.drafts == {}


async def test_enter_before_the_question_is_drawn_checks_what_the_box_held_at_enter(make_app):
    """Keys typed after that Enter (the next try, begun) are not part of the answer it entered."""
    clock = Held("question")
    app = make_app(list(shared_steps.lessons()), start_step=DRILL, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", *"12", "enter", *"3")
        await clock.release(pilot)
        await pilot.pause()
        view = app.screen.query_one(DrillView)
        assert view.question.attempts == 1 and view.query_one("#drill-answer").value == "123"
        assert "12 is too low" in str(view.query_one("#drill-feedback").render())


async def test_esc_after_ctrl_r_keeps_the_keys_on_the_lesson_when_the_question_comes(make_app):
    """tmux, step 16: Tab, ctrl+r, Esc, and 2 s later n: the next question (0.7 s to draw)
    took the focus back into the box as it came, and the n was typed there. The box takes the
    keys at ctrl+r, as the keys after it are typed, and keeps them only until Esc."""
    clock = Held("question")
    app = make_app(list(shared_steps.lessons()), start_step=DRILL, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await clock.release(pilot)
        await pilot.press("ctrl+r")
        assert isinstance(app.focused, AnswerBox)
        await pilot.press("escape")
        await clock.release(pilot)
        assert app.screen.query_one(DrillView).asked == 2 and not isinstance(app.focused, AnswerBox)


async def test_a_number_typed_before_the_reading_s_table_is_drawn_is_chosen_once_it_is(make_app):
    """tmux, step 17, one write of n 2: step 18's table (two simulated runs) came after the 2,
    which was dropped (the goal still "open"); typed once the table shows, it is a choice."""
    from batchtui.widgets.activities.read import ReadView

    clock = Held("question")
    app = make_app(list(shared_steps.lessons()), start_step=18, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        assert app.screen.query_one(ReadView).question is None
        await clock.release(pilot)
        view = app.screen.query_one(ReadView)
        assert view.outcome in ("right", "wrong") and view.goal().note in ("right", "try again")


async def test_ctrl_d_before_the_reading_s_table_is_drawn_shows_its_answer_once_it_is(make_app):
    from batchtui.widgets.activities.read import ReadView

    clock = Held("question")
    app = make_app(list(shared_steps.lessons()), start_step=18, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+d", "1")
        await clock.release(pilot)
        view = app.screen.query_one(ReadView)
        assert view.outcome == "shown" and view.goal().state == "answered"
