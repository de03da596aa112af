"""State folders and files that are not what the app made (issue 22, items 3 and 7): a folder a
`sudo batchtui` left that the learner cannot search, a progress file that is a symbolic link, a
user's own temporary files beside ours."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from batchtui.app import BatchApp
from batchtui.cli import main
from batchtui.progress import Progress, ProgressStore
from batchtui.state_folder import PROGRESS_FILE as FILE_NAME
from batchtui.state_folder import write_atomically
from batchtui.settings import AppSettings
from batchtui.widgets.notice_line import NoticeLine
from batchtui.widgets.step_header import StepHeader
from manual_clock import ManualClock
from standin import make_steps

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def unsearchable(tmp_path, monkeypatch):
    """A state folder whose entries cannot be looked up (as a root-owned mode-700 folder is for
    anyone else): every stat, open or listing inside it is refused."""
    state = tmp_path / "batchtui"
    state.mkdir()
    inside = str(state) + os.sep
    real_stat, real_open, real_scandir = os.stat, os.open, os.scandir

    def refuse(path):
        if os.fspath(path).startswith(inside):
            raise PermissionError(13, "Permission denied", os.fspath(path))

    def stat(path, *args, **kwargs):
        if not isinstance(path, int):
            refuse(path)
        return real_stat(path, *args, **kwargs)

    def open_(path, *args, **kwargs):
        refuse(path)
        return real_open(path, *args, **kwargs)

    def scandir(path="."):
        if os.fspath(path) == str(state):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "scandir", scandir)
    return state


def test_an_unsearchable_state_folder_is_said_and_nothing_is_saved(unsearchable):
    store = ProgressStore(unsearchable)
    progress, notice = store.load()
    assert progress == Progress()
    assert notice and "\n" not in notice and "cannot be read or saved" in notice and "without saving" in notice
    assert store.save(Progress(current_step=3)) is None  # no attempt, no second notice


def test_the_tutorial_opens_on_an_unsearchable_state_folder(unsearchable):
    async def run():
        app = BatchApp(make_steps(), AppSettings(clock=ManualClock(), cursor_blink=False, state_dir=unsearchable))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            notice = app.screen.query_one(NoticeLine).message
            await pilot.press("n")
            await pilot.pause()
            return app.screen.query_one(StepHeader).number, notice
    number, notice = asyncio.run(run())
    assert number == 2  # it runs: the step changed, unsaved
    assert "cannot be read or saved" in notice


def test_batchtui_steps_lists_the_steps_on_an_unsearchable_state_folder(unsearchable, tmp_path, monkeypatch,
                                                                         capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["steps"]) == 0
    out, err = capsys.readouterr()
    assert "cannot be read or saved" in err and err.count("\n") == 1
    assert "<- you are here" in out


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_a_root_owned_folder_for_real(tmp_path):
    """The issue's case, without the monkeypatch: a mode-700 folder owned by someone else, read by
    root without its power to override permissions (as any other user would)."""
    state = tmp_path / "state" / "batchtui"
    state.mkdir(parents=True)
    (state / FILE_NAME).write_text(json.dumps({"version": 1, "current_step": 5}))
    os.chown(state, 65534, 65534)
    state.chmod(0o700)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), PYTHONPATH=str(ROOT))
    done = subprocess.run(["setpriv", "--bounding-set", "-dac_override,-dac_read_search", sys.executable, "-m",
                           "batchtui", "steps"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and "cannot be read or saved" in done.stderr, done.stderr[-600:]
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_progress_file_that_is_a_symlink_is_written_through(tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "progress.json"
    write_atomically(target, json.dumps({"version": 1, "current_step": 2}))
    state = tmp_path / "state"
    state.mkdir()
    (state / FILE_NAME).symlink_to(target)
    store = ProgressStore(state)
    progress, notice = store.load()
    assert notice is None and progress.current_step == 2
    assert store.save(Progress(current_step=7, completed={1})) is None
    assert (state / FILE_NAME).is_symlink()  # the link is kept
    assert json.loads(target.read_text())["current_step"] == 7  # and its target updated
    assert ProgressStore(state).load()[0].current_step == 7
    assert sorted(p.name for p in dotfiles.iterdir()) == ["progress.json"]  # no temporary left


def test_only_the_apps_own_temporaries_are_cleaned(tmp_path):
    hour_ago = time.time() - 3600
    ours = [tmp_path / ".progress-k1ll3d00.tmp", tmp_path / ".crash-20260101-120000-2-abc_1234.tmp"]
    theirs = [tmp_path / ".notes.tmp", tmp_path / ".progress.json.tmp", tmp_path / ".vimrc-x.tmp",
              tmp_path / ".progress-backup.tmp"]  # a user's: it was deleted (issue 38)
    for path in ours + theirs:
        path.write_text("x")
        os.utime(path, (hour_ago, hour_ago))
    ProgressStore(tmp_path).load()
    assert [p.exists() for p in ours] == [False, False]
    assert all(p.exists() for p in theirs)


# -- 8. help from the overlays the footer offers it over ------------------------------------------

@pytest.mark.parametrize("overlay, key", [("contents", "question_mark"), ("contents", "f1"), ("file prompt", "f1")])
async def test_help_opens_from_the_overlays(make_app, overlay, key):
    """(In the file prompt's box, ? is typed: a file name may hold one; its status line says F1.)"""
    from batchtui.screens.contents import ContentsScreen
    from batchtui.screens.file_prompt import FilePromptScreen
    from batchtui.screens.help import HelpScreen

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        if overlay == "contents":
            await pilot.press("t")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, ContentsScreen)
        else:
            screen = FilePromptScreen("File?", Path("x.toml"), saving=True)
            app.push_screen(screen)
            await pilot.pause()
        assert app.screen is screen
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen  # back where help was asked


@pytest.mark.heavy
async def test_the_playgrounds_refusal_fits_two_lines_at_80x24(make_app, tmp_path):
    import steps
    from batchtui.widgets.goal_bar import GoalBar
    from batchtui.widgets.notice_line import NoticeLine

    deep = tmp_path / "a" / "rather" / "long" / "folder" / "name" / "for" / "a" / "scenario"
    deep.mkdir(parents=True)
    bad = deep / "neg.toml"
    bad.write_text("[engine]\nenable_chunked_prefill = false\nmax_num_batched_tokens = 2048\nmax_num_seqs = 64\n")
    app = make_app(list(steps.open_lessons()), start_step=20)
    async with app.run_test(size=(80, 24)) as pilot:
        tutorial = app.screen
        await pilot.press("o")
        app.screen.query_one("#file-prompt-input").value = str(bad)
        await pilot.press("enter")
        await pilot.pause()
        notice = tutorial.query_one(NoticeLine)
        assert "Kept the current scenario" in notice.message and "cannot run" in notice.message
        shown = str(notice.render())
        assert 1 <= notice.size.height <= 2
        assert "neg.toml cannot run" in shown and "max_num_batched_tokens" in shown  # the reason shows
        assert str(deep) not in shown and shown.rstrip().endswith((".", ")"))  # whole, not cut
        assert notice.region.bottom <= tutorial.query_one("#keys").region.y  # the keys still show


def test_fit_drops_asides_then_cuts():
    from batchtui.widgets.notice_line import fit

    text = "Refused: a is b (because c) and d (since e (f))."
    assert fit(text, 100) == text
    assert fit(text, 20) == "Refused: a is b (because c) and d."
    cut = fit("word " * 100, 20)
    assert cut.endswith("...") and len(cut) <= 40


@pytest.mark.heavy
async def test_step_keys_in_one_write_draw_only_the_step_they_end_on(make_app, monkeypatch):
    """Twenty step changes in one read: only the step they end on is drawn (counted by what the
    step header is told to show); a key that is not a step key, read with step keys, acts on
    the step they asked for (it is drawn first)."""
    import steps
    from textual import events

    from batchtui.screens.help import HelpScreen
    from batchtui.widgets.step_header import StepHeader

    drawn = []
    real = StepHeader.show_step

    def show_step(self, section, number, *args):
        drawn.append(number)
        real(self, section, number, *args)

    async def settled(pilot, screen, count: int) -> None:
        for _ in range(400):  # waits on the app's state, not on time
            await pilot.pause()
            if len(drawn) >= count and not screen.navigation.pending:
                return

    app = make_app(list(steps.open_lessons()), start_step=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.tutorial
        monkeypatch.setattr(StepHeader, "show_step", show_step)
        for key in ["n"] * 19 + ["p"] * 3 + ["n"]:  # in one read, as the terminal delivers them
            app.post_message(events.Key(key, key))
        await settled(pilot, screen, 1)
        assert drawn == [18]
        assert screen.query_one(StepHeader).number == 18 and screen.step.number == 18
        for key in ["p", "p", "p", "question_mark"]:
            app.post_message(events.Key(key, "?" if key == "question_mark" else key))
        await settled(pilot, screen, 2)
        for _ in range(100):
            await pilot.pause()
            if isinstance(app.screen, HelpScreen):
                break
        assert drawn == [18, 15] and isinstance(app.screen, HelpScreen)
        assert screen.step.number == 15
    assert app.return_code in (None, 0)
