"""Activities on the real lessons: typed drill answers, chords while typing, predictions."""

from __future__ import annotations

import pytest

from batchtui.clock import call
from batchtui.screens.help import HelpScreen
from batchtui.widgets.activities.drill import DrillView
from batchtui.widgets.activities.predict import PredictView
from batchtui.widgets.answer_box import AnswerBox
from batchtui.widgets.step_header import StepHeader
from manual_clock import ManualClock
from screen_text import screen_text
from steps import lesson_files, read_lesson
from tests import shared_steps


@pytest.fixture(scope="module")
def lessons():
    return shared_steps.lessons()


async def test_drill_takes_a_typed_answer_and_remembers_it(make_app, lessons, state_dir):
    app = make_app(list(lessons), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        drill = app.screen.query_one(DrillView)
        await pilot.press("tab")  # into the answer box
        assert isinstance(app.screen.focused, AnswerBox)
        answer = f"{drill.question.answer:.1f}"
        await pilot.press(*answer, "enter")
        await pilot.pause()
        assert drill.question.solved
        assert "Right" in str(app.screen.query_one("#drill-feedback").render())
        assert app.progress.completed == {2}
        assert app.progress.answers[2] == answer


async def test_a_wrong_answer_gets_feedback_not_a_pass(make_app, lessons):
    app = make_app(list(lessons), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        drill = app.screen.query_one(DrillView)
        await pilot.press("tab", *"1", "enter")
        assert not drill.question.solved
        assert 2 not in app.progress.completed


async def test_plain_letters_type_but_chords_still_work_in_the_answer_box(make_app, lessons):
    app = make_app(list(lessons), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", "n", "q")  # letters go into the box: no step change, no quit
        assert app.screen.focused.value == "nq"
        assert app.screen.query_one(StepHeader).number == 2
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("ctrl+n")
        assert app.screen.query_one(StepHeader).number == 3
        await pilot.press("ctrl+p", "tab", "ctrl+q")
        assert not app.is_running


async def test_give_up_shows_the_worked_answer_and_a_new_question_differs(make_app, lessons):
    app = make_app(list(lessons), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        drill = app.screen.query_one(DrillView)
        first = drill.question.prompt_md
        await pilot.press("ctrl+d")
        assert drill.query_one("#drill-derivation").display
        await pilot.press("ctrl+r")
        assert drill.question.prompt_md != first
        assert not drill.query_one("#drill-derivation").display


async def test_predict_waits_for_a_guess_then_reveals_after_the_run(make_app, lessons):
    app = make_app(list(lessons), start_step=1)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        view = screen.query_one(PredictView)
        assert view.takes_choices and not screen.sim.running  # a guess comes before the run
        await pilot.press("2")
        assert view.predict.guess == 2 and screen.sim.running
        screen.sim.fast_forward(1.0)
        await pilot.pause()
        screen.sim.fast_forward(view.predict.watch_seconds)
        await pilot.pause()
        assert view.revealed
        assert app.progress.completed == {1}


async def test_a_reveal_drawn_while_its_step_closes_does_not_crash_the_app(make_app, lessons, monkeypatch):
    """The reveal is drawn in a worker: a step change while it awaits its Markdown removes the
    view's parts under it (it crashed the app with NoMatches on #predict-status)."""
    drawn = PredictView.show_markdown

    async def step_closes_meanwhile(view, id, text):
        shown = await drawn(view, id, text)
        await view.query_one("#predict-status").remove()
        return shown

    monkeypatch.setattr(PredictView, "show_markdown", step_closes_meanwhile)
    app = make_app(list(lessons), start_step=1)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.screen.query_one(PredictView)
        await pilot.press("2")
        app.screen.sim.fast_forward(view.predict.watch_seconds + 1.0)
        for _ in range(5):
            await pilot.pause()
        assert view.revealed and app.is_running
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running and app.screen.query_one(StepHeader).number == 2


async def test_number_keys_that_come_during_a_step_change_wait_for_the_new_step_s_view(make_app, lessons):
    """A digit in the same read as a step change reached the new step's prediction before its
    parts were mounted: one out of range crashed the app (NoMatches, exit 1; one in twelve runs
    of the random keys); one that came while the old step's view was being taken down went to
    it and crashed the same way. Keys during a step change now wait for the new step's view."""
    import asyncio

    from batchtui.widgets.activity_panel import ActivityPanel

    from steps.activities import build

    app = make_app(list(lessons), start_step=1)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.screen.query_one(ActivityPanel)
        step = app.screen.step
        # While the new view is being mounted (its parts not there yet):
        fresh = PredictView(build(step))
        showing = asyncio.ensure_future(panel.show(fresh))
        for _ in range(1000):  # until the old view is gone and the new one is being mounted
            if panel.view is fresh:
                break
            await asyncio.sleep(0)
        assert panel.view is fresh and not fresh.query("#predict-status")
        panel.choose(4)  # out of range: says so
        panel.choose(2)
        await showing
        await pilot.pause()
        await pilot.pause()
        assert fresh.predict.guess == 2
        assert "guess" in str(fresh.query_one("#predict-status").render()).lower()
        # While the old view (no guess yet) is being taken down: the key is the new view's.
        old, new = PredictView(build(step)), PredictView(build(step))
        await panel.show(old)
        showing = asyncio.ensure_future(panel.show(new))
        await asyncio.sleep(0)
        assert panel.view is old
        panel.choose(3)
        await showing
        await pilot.pause()
        await pilot.pause()
        assert old.predict.guess is None and new.predict.guess == 3


async def test_real_lessons_in_ascii_draw_only_ascii(make_app, lessons):
    app = make_app(list(lessons), start_step=7, ascii_only=True)  # a Markdown table and two curves
    async with app.run_test(size=(80, 24)) as pilot:
        app.screen.sim.fast_forward(5.0)
        await pilot.pause()
        text = screen_text(app)
        assert "Step 7/20" in text and "knee" in text
        assert {ch for ch in text if not ch.isascii()} == set()


async def test_playground_writes_and_opens_its_scenario_and_keeps_it_on_a_bad_file(make_app, lessons, state_dir):
    from batchtui.screens.file_prompt import FilePromptScreen
    from batchtui.widgets.dial import DialControl
    from batchtui.widgets.notice_line import NoticeLine

    app = make_app(list(lessons), start_step=20)
    async with app.run_test(size=(80, 24)) as pilot:
        notice = app.screen.query_one(NoticeLine)
        tutorial = app.screen
        path = state_dir / "playground.toml"
        await pilot.press("o", "enter")  # the prompt suggests playground.toml, not written yet
        assert isinstance(app.screen, FilePromptScreen)
        assert "There is no" in str(app.screen.query_one("#file-prompt-status").render())
        await pilot.press("escape")
        await pilot.press("w", "enter")
        assert app.screen is tutorial and path.exists() and "Saved" in notice.message
        good = path.read_text()
        path.write_text('gpu = "tpu-v9')  # a line cut short
        await pilot.press("o", "enter")
        assert "Kept the current scenario" in notice.message and "not valid TOML" in notice.message
        path.write_text(good.replace("max_num_seqs = 256", "max_num_seqs = 32"))
        await pilot.press("o", "enter")
        await pilot.pause()
        assert "Loaded" in notice.message
        seats = next(d for d in app.screen.query(DialControl) if d.spec.name == "engine.max_num_seqs")
        assert seats.value == 32 and app.screen.sim.engine.scenario.engine["max_num_seqs"] == 32


BREAK_ITS = [read_lesson(path)[0]["number"] for path in lesson_files()
             if read_lesson(path)[0]["activity"]["kind"] == "break_it"]  # front matter only: no simulator at collection


@pytest.mark.parametrize("number", BREAK_ITS)
async def test_show_me_on_a_break_it_sets_dials_that_break_it_and_the_verdict_follows(make_app, lessons, number):
    from batchtui.widgets.activities.break_it import BreakItView
    from batchtui.widgets.dial import DialControl
    from batchtui.widgets.notice_line import NoticeLine
    from steps import activities, get_path

    step = next(s for s in lessons if s.number == number)
    show = activities.build(step).show_me()
    app = make_app(list(lessons), start_step=number)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        view = screen.query_one(BreakItView)
        footer = screen_text(app).split("\n")[-1]
        assert "^d show me" in footer
        # A dial moved away from the start goes back to it: the settings break it from there.
        controls = {d.spec.name: d for d in screen.query(DialControl)}
        other = next((d for name, d in controls.items() if name not in show.dials), None)
        if other is not None:
            other.post_message(DialControl.Changed(other, other.spec.min))
            await pilot.pause()
        screen.sim.fast_forward(5.0)
        await pilot.pause()
        await pilot.press(*["h"] * (len(step.hints) + 1))  # after the hints, the key that shows it
        assert screen.query_one(NoticeLine).message == "No more hints for this step. ^d: show me."
        await pilot.press("ctrl+d")
        await pilot.pause()
        notice = screen.query_one(NoticeLine).message
        assert notice.startswith("Show me:") and notice.startswith(show.words)
        if other is not None:
            assert notice.endswith(f"{other.spec.label} back to the step's start.")
            assert other.value == other.spec.value(step.scenario)
        for path, value in show.dials.items():
            assert controls[path].value == value and get_path(screen.sim.scenario, path) == value
        assert screen.sim.engine.time < 1.0 and screen.sim.running  # a fresh run, running
        assert view.verdict is None
        for _ in range(180):  # frames of a second, as the app's clock would deliver them
            screen.sim.fast_forward(1.0)
            await pilot.pause()
            if view.verdict is not None:
                break
        assert view.verdict is not None, f"step {number}: show me did not break it in 180 simulated s"
        assert number in app.progress.completed
        assert "show me" not in screen_text(app).split("\n")[-1]


class Held(ManualClock):
    """A manual clock that holds the background work of `group` until `release`: a drill
    question being drawn (the seconds a slow draw, step 16 sweeps a curve first, takes on a
    loaded machine), or a curve's rate sweep (not run at all unless released)."""

    def __init__(self, group: str = "question") -> None:
        self.group = group
        self.held = []

    async def in_background(self, widget, work, done, delay: float = 0.0, group: str = "background") -> None:
        if group == self.group:
            self.held.append((work, done))
            return
        await super().in_background(widget, work, done, delay, group)

    async def release(self, pilot) -> None:
        """Do what is held, and what that asks for next (a drill draws its questions in turn),
        until nothing is."""
        while self.held:
            work, done = self.held.pop(0)
            await call(done, work())
        await pilot.pause()


async def test_an_answer_entered_while_its_question_is_drawn_is_checked_once_it_shows(make_app, lessons):
    """Keys in one burst: tab, a number and Enter before the question is drawn. The Enter was
    dropped (the number stayed in the box, unchecked); now it is checked when the question
    shows. Likewise after ctrl+r: what is typed while the new question is drawn is for it."""
    clock = Held("question")
    app = make_app(list(lessons), start_step=2, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        drill = app.screen.query_one(DrillView)
        await pilot.press("tab", "1", "2", "3", "enter")
        assert drill.question is None and app.screen.focused.value == "123"
        assert "still being drawn" in str(drill.query_one("#drill-feedback").render())
        await clock.release(pilot)
        assert drill.question.attempts == 1
        assert "123" in str(drill.query_one("#drill-feedback").render())
        first = drill.question
        await pilot.press("ctrl+r", "4", "5", "enter")
        assert drill.question is first and first.attempts == 1  # not checked against the old one
        await clock.release(pilot)
        assert drill.question is not first and drill.question.attempts == 1
        assert app.screen.focused.value == "45"
        assert "45" in str(drill.query_one("#drill-feedback").render())


async def test_a_worked_answer_s_seats_are_the_seats_the_curve_sweeps(make_app, lessons):
    """Step 16: ctrl+d sets the seats of the question (128) beside its worked answer; the curve
    went on showing the 256-seat sweep (knee and saturated rate of the old seats) while the
    answer read the SLO rate off the 128-seat one."""
    app = make_app(list(lessons), start_step=16, clock=Held("sweep"))  # (what is swept, not run)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        drill = app.screen.query_one(DrillView)
        seats = drill.question.run_dials["engine.max_num_seqs"]
        assert app.screen.sweeps.swept.engine["max_num_seqs"] != seats
        await pilot.press("ctrl+d")
        for _ in range(3):
            await pilot.pause()
        assert app.screen.run.sim.scenario.engine["max_num_seqs"] == seats
        assert app.screen.sweeps.swept.engine["max_num_seqs"] == seats


async def test_a_setting_not_on_the_step_s_dials_is_named_as_the_simulator_names_it(make_app, lessons):
    """Step 9's worked answer runs its question's traffic: the line said "Running with Traffic
    12 req/s, mean 384." (the last word of workload.output.mean); it names the output length."""
    app = make_app(list(lessons), start_step=9)
    async with app.run_test(size=(80, 24)) as pilot:
        drill = app.screen.query_one(DrillView)
        output = drill.question.run_dials["workload.output.mean"]
        await pilot.press("ctrl+d")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert f"output length {output} tokens" in text and f"mean {output}" not in text


async def test_a_prediction_runs_the_setting_its_question_asks_about(make_app, lessons):
    """Step 17 asks how much sooner the job ends with its 512 seats than with 64. With the seats
    dial turned up before the guess, the job ran at 1,024 seats and the reading the answer came
    with (1.56 times as long) was another question's. The guess puts the dials back at the
    step's start and, a job being timed from its start, starts the job over."""
    step = next(s for s in lessons if s.number == 17)
    asked = step.scenario.engine_config().max_num_seqs
    app = make_app(list(lessons), start_step=17)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await pilot.press("space")  # run before guessing: allowed
        screen.sim.fast_forward(2.0)
        await pilot.press("tab", "right", "right", "escape")
        await pilot.pause()
        assert screen.sim.scenario.engine_config().max_num_seqs != asked
        screen.sim.fast_forward(2.0)
        await pilot.pause()
        assert screen.sim.time > 0
        await pilot.press("2")
        for _ in range(3):
            await pilot.pause()
        assert screen.sim.scenario.engine_config().max_num_seqs == asked
        assert screen.sim.time == 0.0 and screen.sim.running
        assert "Seats back to the step's start." in " ".join(screen_text(app).split())
