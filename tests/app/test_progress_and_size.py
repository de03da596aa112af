"""Progress survives a restart; a bad progress file never stops the app; a small terminal gets
a plain message."""

from __future__ import annotations

import json

import pytest

from batchtui.progress import Progress, ProgressStore
from batchtui.state_folder import state_dir
from batchtui.screens.too_small import TooSmallScreen
from batchtui.screens.tutorial import TutorialScreen
from batchtui.widgets.notice_line import NoticeLine
from batchtui.widgets.step_header import StepHeader


async def test_the_step_survives_a_restart(make_app, state_dir):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", "n")
    saved = json.loads((state_dir / "progress.json").read_text())
    assert saved["current_step"] == 3

    again = make_app()
    async with again.run_test(size=(80, 24)):
        assert again.screen.query_one(StepHeader).number == 3


async def test_step_option_wins_over_saved_progress(make_app, state_dir):
    ProgressStore(state_dir).save(Progress(current_step=3))
    app = make_app(start_step=2)
    async with app.run_test(size=(80, 24)):
        assert app.screen.query_one(StepHeader).number == 2


async def test_reset_progress_starts_at_step_one(make_app, state_dir):
    ProgressStore(state_dir).save(Progress(current_step=3, completed={1}))
    app = make_app(reset_progress=True)
    async with app.run_test(size=(80, 24)):
        assert app.tutorial.query_one(StepHeader).number == 1
        assert app.progress.completed == set()


async def test_a_corrupt_progress_file_is_set_aside_with_a_notice(make_app, state_dir):
    state_dir.mkdir(parents=True)
    (state_dir / "progress.json").write_text("{not json")
    app = make_app()
    async with app.run_test(size=(80, 24)):
        assert app.screen.query_one(StepHeader).number == 1
        notice = app.screen.query_one(NoticeLine)
        assert "unreadable" in notice.message and "progress.json.unreadable" in notice.message
        assert "\n" not in notice.message
    assert (state_dir / "progress.json.unreadable").read_text() == "{not json"


async def test_below_80x22_a_plain_message_then_everything_comes_back(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await pilot.resize_terminal(70, 20)
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        assert "at least 80x22" in str(app.screen.query_one("#too-small-message").render())
        await pilot.resize_terminal(80, 22)  # an 80x24 terminal in tmux with two status lines
        await pilot.pause()
        assert isinstance(app.screen, TutorialScreen)
        await pilot.resize_terminal(80, 21)
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        assert isinstance(app.screen, TutorialScreen)
        assert app.screen.query_one(StepHeader).number == 2


async def test_the_run_waits_while_the_terminal_is_too_small_and_goes_on_after(make_app):
    """The simulation went on behind the too-small message (t 1.96 s -> 6.25 s in 4 s at 60x20,
    unseen); it pauses there, resumes where it was, and a run paused by the learner stays so."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        run = app.screen.run
        assert run.sim.running
        run.sim.fast_forward(1.0)
        run.sim.resume()
        at = run.sim.time
        await pilot.resize_terminal(70, 20)
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen) and not run.sim.running
        await pilot.resize_terminal(80, 22)
        await pilot.pause()
        assert isinstance(app.screen, TutorialScreen) and run.sim.running and run.sim.time == at
        await pilot.press("space")  # paused by the learner: still paused after a resize
        assert not run.sim.running
        await pilot.resize_terminal(70, 20)
        await pilot.pause()
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not run.sim.running


async def test_starting_in_a_small_terminal_shows_the_message(make_app):
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        await app.tutorial.run.begin_now()  # the step's run, started unseen, waits
        assert not app.tutorial.run.sim.running
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert isinstance(app.screen, TutorialScreen) and app.tutorial.run.sim.running


# -- the store on its own


def test_state_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert state_dir() == tmp_path / "batchtui"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/path")  # invalid per the spec: ignored
    assert state_dir().parts[-3:] == (".local", "state", "batchtui")


def test_round_trip_keeps_answers_and_completed(tmp_path):
    store = ProgressStore(tmp_path)
    store.save(Progress(current_step=9, completed={2, 9}, answers={2: "167", 9: "47"}))
    loaded, notice = ProgressStore(tmp_path).load()
    assert notice is None
    assert loaded == Progress(current_step=9, completed={2, 9}, answers={2: "167", 9: "47"})
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]  # no temporary file left


def test_a_wrong_shape_is_set_aside_too(tmp_path):
    (tmp_path / "progress.json").write_text(json.dumps({"current_step": "three"}))
    (tmp_path / "progress.json.unreadable").write_text("older")
    progress, notice = ProgressStore(tmp_path).load()
    assert progress == Progress()
    assert "progress.json.unreadable-2" in notice
    assert (tmp_path / "progress.json.unreadable").read_text() == "older"


def test_an_unwritable_directory_is_reported_once(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = ProgressStore(blocker / "state")  # a directory under a file cannot be made
    first = store.save(Progress())
    assert first and "cannot be saved" in first
    assert store.save(Progress()) is None


@pytest.mark.parametrize("height", [23, 22])
async def test_on_a_short_terminal_the_focused_dial_s_help_shows_in_the_status_line(make_app, height):
    from batchtui.widgets.sim_status import SimStatus

    app = make_app()
    async with app.run_test(size=(80, height)) as pilot:
        await pilot.pause()
        help_line = app.screen.query_one("#dial-help")
        assert not help_line.display or help_line.region.area == 0
        status = app.screen.query_one(SimStatus)
        assert "t 0.00 s" in str(status.render())
        await pilot.press("tab")
        await pilot.pause()
        assert "enter types" in str(status.render())
        await pilot.press("escape")
        await pilot.pause()
        assert "t 0.00 s" in str(status.render())


async def test_at_80x24_the_dials_keep_their_own_help_line(make_app):
    from batchtui.widgets.sim_status import SimStatus

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab")
        await pilot.pause()
        assert "enter types" in str(app.screen.query_one("#dial-help").render())
        assert "enter types" not in str(app.screen.query_one(SimStatus).render())


def test_still_open_names_the_steps_not_done_in_runs():
    done = Progress(completed={2, 3, 4, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16, 18, 19, 20})
    assert done.still_open(range(1, 21)) == "Still open: steps 1, 5, 11, 17."
    assert Progress(completed=set(range(1, 21)) - {5}).still_open(range(1, 21)) == "Still open: step 5."
    assert Progress().still_open(range(1, 21)) == "Still open: steps 1-20."
    assert Progress(completed={3}).still_open(range(1, 6)) == "Still open: steps 1, 2, 4, 5."
    assert Progress(completed=set(range(1, 21))).still_open(range(1, 21)) == ""


async def test_the_last_step_says_which_steps_are_still_open(make_app, state_dir):
    ProgressStore(state_dir).save(Progress(completed={1, 3}))
    app = make_app(start_step=3)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")  # the stand-in's last step, 4
        await pilot.pause()
        assert app.screen.query_one(StepHeader).number == 4
        assert app.screen.query_one(NoticeLine).message == (
            "The last step. Still open: step 2. t opens the table of contents.")
        await pilot.press("n")
        assert "Still open: steps 2, 4." in app.screen.query_one(NoticeLine).message
