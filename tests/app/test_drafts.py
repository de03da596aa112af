"""A drill answer typed and not entered yet (a draft) is not lost: leaving the step (n, p, the
table of contents) and coming back shows it in the box, and so does quitting and opening the app
again on the same state folder. It is never an answer: it completes nothing."""

from __future__ import annotations

import json

import pytest

from batchtui.progress import MAX_FILE_BYTES, MAX_TEXT_CHARS, Progress, ProgressStore
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
        assert app.progress.drafts == {(DRILL, 1): "9"}
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
    ({"2": 5, "x": "a", "0": "b", "-1": "c", "3": "ok\x07", "4": ""}, {(3, 1): "ok"}),
    ({"2:3": "a", "2:0": "b", "0:2": "c", "2:x": "d", "2:3:4": "e", ":2": "f", "2:": "g", "5:1": "h"},
     {(2, 3): "a", (5, 1): "h"}),
])
def test_malformed_drafts_are_dropped_and_the_rest_read(tmp_path, drafts, kept):
    (tmp_path / "progress.json").write_text(json.dumps(
        {"version": 1, "current_step": 4, "completed": [1], "answers": {"1": "2"}, "drafts": drafts}))
    progress, notice = ProgressStore(tmp_path).load()
    assert notice is None
    assert progress == Progress(current_step=4, completed={1}, answers={1: "2"}, drafts=kept)


def test_a_pasted_page_is_kept_cut_and_twenty_such_drafts_still_load(tmp_path):
    """Cut to `MAX_TEXT_CHARS`, so drafts alone (each character at its widest JSON escape, an
    emoji's twelve bytes) never make the file too large to read (`MAX_FILE_BYTES`)."""
    progress = Progress()
    assert progress.keep_draft(2, "9" * (MAX_TEXT_CHARS + 10)) and progress.drafts[2, 1] == "9" * MAX_TEXT_CHARS
    assert not progress.keep_draft(2, "9" * (MAX_TEXT_CHARS + 20))  # (the same draft, as kept)
    for number in range(1, 21):
        progress.keep_draft(number, "\U0001F600" * MAX_TEXT_CHARS)
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


def question_text(app) -> str:
    return app.screen.query_one(DrillView).question.prompt_md


async def test_a_draft_belongs_to_its_question_not_to_the_next_one_ctrl_r_asks(make_app, lessons, state_dir):
    """A draft is kept per question: one typed on the step's first question is not in the box of
    the next question ctrl+r asks, nor is that one's on the first when the step opens again."""
    app = make_app(list(lessons), start_step=DRILL)
    async with app.run_test(size=(80, 24)) as pilot:
        first = question_text(app)
        await pilot.press("tab", *"9", "ctrl+r")
        await pilot.pause()
        assert question_text(app) != first and box(app) == ""
        await pilot.press(*"55", "escape", "n", "p")
        await pilot.pause()
        assert question_text(app) == first and box(app) == "9"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert box(app) == "55"
        app.exit()
    assert saved(state_dir)["drafts"] == {str(DRILL): "9", f"{DRILL}:2": "55"}
    again = make_app(list(lessons))
    async with again.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert box(again) == "9"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert box(again) == "55"


async def test_a_draft_typed_after_the_first_question_was_answered_waits_for_its_own(make_app, lessons, state_dir):
    """The first question answered, the next one's draft is not on the first when the step opens
    again (done: asked again, its box empty), and is there when ctrl+r asks that question again."""
    app = make_app(list(lessons), start_step=DRILL)
    async with app.run_test(size=(80, 24)) as pilot:
        answer = f"{app.screen.query_one(DrillView).question.answer:.1f}"
        await pilot.press("tab", *answer, "enter", "ctrl+r")
        await pilot.pause()
        assert DRILL in app.progress.completed and box(app) == ""
        await pilot.press(*"7", "escape", "n", "p")
        await pilot.pause()
        assert box(app) == ""
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert box(app) == "7"
    assert saved(state_dir)["drafts"] == {f"{DRILL}:2": "7"}


async def test_a_right_answer_with_a_page_pasted_after_it_is_kept_cut_and_the_file_still_opens(
        make_app, lessons, state_dir):
    """An answer is kept as a draft is (`kept_text`): a right number with a paste past the file's
    read limit behind it completed the step and was saved whole, and the next start set the file
    aside as too large, the learner's progress with it."""
    from textual import events

    app = make_app(list(lessons), start_step=DRILL)
    async with app.run_test(size=(80, 24)) as pilot:
        answer = f"{app.screen.query_one(DrillView).question.answer:.1f} "
        await pilot.press("tab", *answer)
        app.screen.focused.post_message(events.Paste("\U0001F600" * (MAX_FILE_BYTES // 4 + 1)))
        await pilot.pause()
        await pilot.press("enter", "escape", "ctrl+q")
    assert (state_dir / "progress.json").stat().st_size <= MAX_FILE_BYTES
    again = make_app(list(lessons))
    async with again.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert again.startup_notice is None
        assert DRILL in again.progress.completed
        assert again.progress.answers[DRILL] == (answer + "\U0001F600" * MAX_TEXT_CHARS)[:MAX_TEXT_CHARS]


def test_drafts_on_dozens_of_questions_each_a_pasted_page_still_load(tmp_path):
    """Drafts per question have no count: past the file's read limit, the longest are left out of
    the file (this session keeps them) and every answer and the rest are saved and read back."""
    progress = Progress(current_step=2, completed={1})
    for number in range(1, 21):
        progress.keep_answer(number, "\U0001F600" * (MAX_TEXT_CHARS + 1))
    for question in range(1, 61):
        progress.keep_draft(2, "\U0001F600" * (MAX_TEXT_CHARS - question), question)
    store = ProgressStore(tmp_path)
    assert store.save(progress) is None and store.path.stat().st_size <= MAX_FILE_BYTES
    read, notice = ProgressStore(tmp_path).load()
    assert notice is None and read.answers == progress.answers and len(read.answers[1]) == MAX_TEXT_CHARS
    assert read.drafts and all(progress.drafts[k] == v for k, v in read.drafts.items())
    left_out = set(progress.drafts) - set(read.drafts)
    assert left_out and max(len(read.drafts[k]) for k in read.drafts) <= min(len(progress.drafts[k]) for k in left_out)
    assert len(progress.drafts) == 60


def test_progress_too_large_to_read_back_is_not_written(tmp_path):
    """(Not from the app, whose answers are one a step: a file's own hundreds of them.) The file
    on disk, which was read, stays; the session says once that it is not saved."""
    store = ProgressStore(tmp_path)
    assert store.save(Progress(current_step=3)) is None
    huge = Progress(answers={number: "\U0001F600" * MAX_TEXT_CHARS for number in range(1, 80)})
    notice = store.save(huge)
    assert notice is not None and "KiB" in notice and str(MAX_FILE_BYTES // 1024) in notice
    assert ProgressStore(tmp_path).load() == (Progress(current_step=3), None)


def test_the_tutorial_page_says_where_a_text_is_cut():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "tutorial.md").read_text(encoding="utf-8")
    assert f"first {MAX_TEXT_CHARS:,} characters" in " ".join(page.split())
