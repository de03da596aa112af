"""A drill answer typed and not entered yet (a draft) is not lost: leaving the step (n, p, the
table of contents) and coming back shows it in the box, and so does quitting and opening the app
again on the same state folder. It is never an answer: it completes nothing."""

from __future__ import annotations

import json

import pytest

from batchtui.progress import MAX_DRAFT_CHARS, MAX_FILE_BYTES, Progress, ProgressStore
from manual_clock import ManualClock
from batchtui.widgets.activities.drill import DrillView
from batchtui.widgets.step_header import StepHeader
import steps
from tests import shared_steps

DRILL = 2
"""Step 2's activity is a drill (`lessons/`); step 3, next to it, is not the same drill."""


@pytest.fixture(scope="module")
def lessons():
    return shared_steps.lessons()


def box(app) -> str:
    return app.screen.query_one(DrillView).query_one("#drill-answer").value


def saved(state_dir) -> dict:
    return json.loads((state_dir / "progress.json").read_text(encoding="utf-8"))


async def test_typed_then_n_and_p_in_one_burst_shows_it_again(make_app, lessons, state_dir):
    app = make_app(list(lessons), start_step=DRILL)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", *"12.5 tok", "escape", "n", "p")  # one burst, as typed
        await pilot.pause()
        assert app.screen.query_one(StepHeader).number == DRILL
        assert box(app) == "12.5 tok"
        assert DRILL not in app.progress.completed and DRILL not in app.progress.answers
    assert saved(state_dir)["drafts"] == {str(DRILL): "12.5 tok"}


class Undrawn(ManualClock):
    """Drill questions are never drawn (a slow draw the learner does not wait for)."""

    async def in_background(self, widget, work, done, delay: float = 0.0, group: str = "background") -> None:
        if group != "question":
            await super().in_background(widget, work, done, delay, group)


async def test_typed_before_the_question_is_drawn_is_there_again_before_it_is(make_app, lessons):
    app = make_app(list(lessons), start_step=DRILL, clock=Undrawn())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", *"12", "escape", "n", "p")
        await pilot.pause()
        assert app.screen.query_one(DrillView).question is None and box(app) == "12"
        await pilot.press("n", "p")  # (left again before it was drawn: still there)
        await pilot.pause()
        assert box(app) == "12"


async def test_typed_then_the_table_of_contents_and_back_shows_it_again(make_app, lessons):
    app = make_app(list(lessons), start_step=DRILL)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", *"300", "escape", "t", "down", "enter")
        await pilot.pause()
        assert app.screen.query_one(StepHeader).number == DRILL + 1
        await pilot.press("t", "up", "enter")
        await pilot.pause()
        assert app.screen.query_one(StepHeader).number == DRILL
        assert box(app) == "300"


async def test_typed_then_quit_and_reopen_shows_it_again(make_app, lessons, state_dir):
    app = make_app(list(lessons), start_step=DRILL)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", *"41", "ctrl+q")  # quit while typing
    assert saved(state_dir)["drafts"] == {str(DRILL): "41"}
    again = make_app(list(lessons))
    async with again.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert again.screen.query_one(StepHeader).number == DRILL
        assert box(again) == "41"
        await pilot.press("tab", "end", "5")  # (tab selects it, as in any filled box)
        assert box(again) == "415"
        assert DRILL not in again.progress.completed and DRILL not in again.progress.answers


async def test_an_entered_answer_is_no_draft(make_app, lessons, state_dir):
    app = make_app(list(lessons), start_step=DRILL)
    async with app.run_test(size=(80, 24)) as pilot:
        drill = app.screen.query_one(DrillView)
        answer = f"{drill.question.answer:.1f}"
        await pilot.press("tab", *"9", "escape", "n", "p")
        await pilot.pause()
        assert app.progress.drafts == {DRILL: "9"}
        await pilot.press("tab", "backspace", *answer, "enter", "escape", "n")
        await pilot.pause()
        assert app.progress.completed == {DRILL} and app.progress.answers[DRILL] == answer
    assert saved(state_dir)["drafts"] == {}


async def test_an_old_progress_file_without_drafts_opens_and_takes_one(make_app, lessons, state_dir):
    """A file as batchtui wrote it before drafts were kept: read as it was, then saved with a
    draft beside its answers."""
    old = {"version": 1, "current_step": DRILL, "completed": [1], "answers": {"1": "2"}}
    state_dir.mkdir(parents=True)
    (state_dir / "progress.json").write_text(json.dumps(old), encoding="utf-8")
    app = make_app(list(lessons))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.startup_notice is None
        assert app.screen.query_one(StepHeader).number == DRILL and box(app) == ""
        await pilot.press("tab", *"7", "ctrl+q")
    assert saved(state_dir) == {**old, "drafts": {str(DRILL): "7"}}


@pytest.mark.parametrize("drafts, kept", [
    ([1, 2], {}),
    ("7", {}),
    ({"2": 5, "x": "a", "0": "b", "-1": "c", "3": "ok\x07", "4": ""}, {3: "ok"}),
])
def test_malformed_drafts_are_dropped_and_the_rest_read(tmp_path, drafts, kept):
    (tmp_path / "progress.json").write_text(json.dumps(
        {"version": 1, "current_step": 4, "completed": [1], "answers": {"1": "2"}, "drafts": drafts}))
    progress, notice = ProgressStore(tmp_path).load()
    assert notice is None
    assert progress == Progress(current_step=4, completed={1}, answers={1: "2"}, drafts=kept)


def test_a_pasted_page_is_kept_cut_and_twenty_such_drafts_still_load(tmp_path):
    """Cut to `MAX_DRAFT_CHARS`, so drafts alone (each character at its widest JSON escape, an
    emoji's twelve bytes) never make the file too large to read (`MAX_FILE_BYTES`)."""
    progress = Progress()
    assert progress.keep_draft(2, "9" * (MAX_DRAFT_CHARS + 10)) and progress.drafts[2] == "9" * MAX_DRAFT_CHARS
    assert not progress.keep_draft(2, "9" * (MAX_DRAFT_CHARS + 20))  # (the same draft, as kept)
    for number in range(1, 21):
        progress.keep_draft(number, "\U0001F600" * MAX_DRAFT_CHARS)
    store = ProgressStore(tmp_path)
    assert store.save(progress) is None and store.path.stat().st_size < MAX_FILE_BYTES
    assert ProgressStore(tmp_path).load() == (progress, None)


async def test_typed_while_the_steps_figures_are_computed_is_kept_on_quit(make_app, state_dir):
    """Keys in one burst that reach the answer box before the step's figures arrive: the figures
    swap the step in (the same number), which keeps the box's text as the draft in memory; a quit
    then found nothing new and wrote nothing (seen in tmux: `nn<Tab>42.5` in one write, ctrl+q:
    drafts {})."""
    from tests.app.test_first_frame import HeldClock

    lessons = steps.open_lessons()
    clock = HeldClock()
    app = make_app(lessons, start_step=DRILL, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.screen.step.figures_pending and clock.held
        await pilot.press("tab", *"42.5")
        await clock.release()
        for _ in range(200):
            await pilot.pause()
            if not app.screen.step.figures_pending:
                break
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.screen.step.figures_pending and box(app) == "42.5"
        app.exit()
    assert saved(state_dir)["drafts"] == {str(DRILL): "42.5"}
