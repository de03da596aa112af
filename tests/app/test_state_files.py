"""Progress files with any content at all: the app opens, says what it did in one line, keeps
what it could not read (a newer version untouched), cleans up after killed runs. Fuzzed with
hypothesis: arbitrary bytes, arbitrary JSON shapes, deep nesting."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from batchtui.app import BatchApp
from batchtui.progress import MAX_FILE_BYTES, Progress, ProgressStore, clean_text
from batchtui.state_folder import PROGRESS_FILE as FILE_NAME
from batchtui.state_folder import remove_stale_temporaries
from batchtui.settings import AppSettings
from batchtui.widgets.notice_line import NoticeLine
from batchtui.widgets.step_header import StepHeader
from manual_clock import ManualClock
from standin import make_steps
from tests.examples import examples

# The autouse fixtures (conftest) only set environment variables: fine to share between examples.
SLOW_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=5)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=5), max_leaves=30)
# Files shaped like ours, with any value in any field: where the parser's checks are exercised.
progress_like = st.fixed_dictionaries({}, optional={
    "version": st.sampled_from([1, 0, -1, 2, 99, 10**30, "1", 1.0, True, None]) | json_values,
    "current_step": st.integers(-5, 10**6) | json_values,
    "completed": st.lists(st.integers(-3, 30) | json_values, max_size=8) | json_values,
    "answers": st.dictionaries(st.text(max_size=6) | st.integers(0, 30).map(str), st.text(max_size=20) | json_values,
                               max_size=5) | json_values,
    "unknown": json_values,
})
DEEP = [b"[" * 200_000, b"[" * 5_000 + b"]" * 5_000, b'{"a":' * 100_000, b'{"answers": ' + b"[" * 50_000]


def load_from(raw: bytes) -> tuple[Path, Progress, str | None]:
    directory = Path(tempfile.mkdtemp())
    (directory / FILE_NAME).write_bytes(raw)
    progress, notice = ProgressStore(directory).load()
    return directory, progress, notice


def check_outcome(directory: Path, raw: bytes, progress: Progress, notice: str | None) -> None:
    """Whatever the file held: a usable Progress, one short line if it was set aside, the bytes
    kept beside, and the next save and load agree."""
    assert isinstance(progress.current_step, int) and progress.current_step >= 1
    assert all(isinstance(n, int) for n in progress.completed)
    assert all(isinstance(k, int) and clean_text(v) == v for k, v in progress.answers.items())
    path = directory / FILE_NAME
    if notice is None:
        assert path.read_bytes() == raw  # read, not touched
    else:
        assert "\n" not in notice and len(notice) < 400
        kept = [p for p in directory.iterdir() if p.name.startswith(FILE_NAME + ".")]
        assert [p.read_bytes() for p in kept] == [raw]  # set aside byte for byte
        assert not path.exists()
    store = ProgressStore(directory)
    assert store.save(progress) is None
    again, notice_again = ProgressStore(directory).load()
    assert notice_again is None and again == progress


@settings(max_examples=examples(150), deadline=None, suppress_health_check=SLOW_OK)
@given(st.binary(max_size=600))
@example(b"\xff\xfe\x00junk")
@example(b"")
@example(b"null")
@example(b'{"current_step": 1' + b"1" * 5000 + b"}")  # past Python's digit limit for int()
@example(b'{"answers": {"3": "\\u0000\\u001b[2J\\ud800"}}')  # control codes, a lone surrogate
def test_any_bytes(raw):
    directory, progress, notice = load_from(raw)
    check_outcome(directory, raw, progress, notice)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=SLOW_OK)
@given(json_values | progress_like)
def test_any_json_shape(data):
    raw = json.dumps(data).encode()
    directory, progress, notice = load_from(raw)
    check_outcome(directory, raw, progress, notice)


@pytest.mark.parametrize("raw", DEEP, ids=["open-brackets", "valid-but-deep", "open-objects", "deep-answers"])
def test_deep_nesting_is_set_aside(raw):
    directory, progress, notice = load_from(raw)
    assert progress == Progress() and notice and "nested too deeply" in notice
    check_outcome(directory, raw, progress, notice)


def test_a_huge_file_is_not_read_but_set_aside():
    raw = b'{"current_step": 3, "pad": "' + b"x" * MAX_FILE_BYTES + b'"}'
    directory, progress, notice = load_from(raw)
    assert progress == Progress() and "larger than" in notice
    check_outcome(directory, raw, progress, notice)


@pytest.mark.parametrize("make", [os.mkfifo, os.mkdir], ids=["fifo", "folder"])
def test_a_progress_path_that_is_no_file_is_set_aside(tmp_path, make):
    make(tmp_path / FILE_NAME)
    progress, notice = ProgressStore(tmp_path).load()
    assert progress == Progress() and notice and "\n" not in notice
    assert not (tmp_path / FILE_NAME).exists() and (tmp_path / (FILE_NAME + ".unreadable")).exists()
    assert ProgressStore(tmp_path).save(Progress(current_step=2)) is None


def test_a_newer_version_is_kept_untouched_and_never_overwritten():
    raw = json.dumps({"version": 99, "current_step": 7, "bookmarks": [1, 2]}).encode()
    directory, progress, notice = load_from(raw)
    assert progress == Progress()
    assert "newer batchtui (format 99)" in notice and "progress.json.v99" in notice
    assert (directory / "progress.json.v99").read_bytes() == raw
    ProgressStore(directory).save(Progress(current_step=2))  # this session's progress
    assert (directory / "progress.json.v99").read_bytes() == raw


def test_a_byte_order_mark_is_read_past():
    """An editor's UTF-8 BOM set the file aside as unreadable (issue 38)."""
    raw = b"\xef\xbb\xbf" + json.dumps({"version": 1, "current_step": 4, "completed": [1]}).encode()
    directory, progress, notice = load_from(raw)
    assert notice is None and progress == Progress(current_step=4, completed={1})


def test_a_version_no_batchtui_has_is_unreadable_not_newer():
    """Version 1e30 was kept as `progress.json.v?` (issue 38): no format number, so unreadable."""
    raw = json.dumps({"version": 10**30, "current_step": 2}).encode()
    directory, progress, notice = load_from(raw)
    assert progress == Progress() and "its version is not a format number" in notice
    assert sorted(p.name for p in directory.iterdir()) == ["progress.json.unreadable"]


def test_a_read_only_file_is_read_and_never_replaced(tmp_path):
    """A learner who made the file read-only keeps it as it is (it was replaced silently)."""
    path = tmp_path / FILE_NAME
    raw = json.dumps({"version": 1, "current_step": 5}).encode()
    path.write_bytes(raw)
    path.chmod(0o444)
    store = ProgressStore(tmp_path)
    progress, notice = store.load()
    assert progress.current_step == 5 and "is read-only" in notice and "\n" not in notice
    assert store.save(Progress(current_step=9)) is None  # said once, at load
    assert path.read_bytes() == raw and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_a_dangling_link_makes_no_folders(tmp_path):
    """Saving through a progress link whose target's folder is gone created that folder and its
    parents (issue 38): now the save fails in one line and nothing is made."""
    state = tmp_path / "state"
    state.mkdir()
    (state / FILE_NAME).symlink_to(tmp_path / "gone" / "deeper" / FILE_NAME)
    store = ProgressStore(state)
    assert store.load() == (Progress(), None)
    notice = store.save(Progress(current_step=2))
    assert notice and "cannot be saved" in notice and "\n" not in notice
    assert not (tmp_path / "gone").exists() and (state / FILE_NAME).is_symlink()


def test_a_file_that_cannot_be_moved_aside_is_never_written_over(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root may write in a read-only directory")
    (tmp_path / FILE_NAME).write_text('{"version": 5}')
    tmp_path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        store = ProgressStore(tmp_path)
        progress, notice = store.load()
        assert "could not be moved" in notice and "without saving over it" in notice
        assert store.save(Progress(current_step=3)) is None
        assert (tmp_path / FILE_NAME).read_text() == '{"version": 5}'
    finally:
        tmp_path.chmod(stat.S_IRWXU)


def test_a_file_that_cannot_be_moved_aside_is_never_written_over_even_as_root(tmp_path, monkeypatch):
    (tmp_path / FILE_NAME).write_text('{"version": 5}')

    def refuse(*args):
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", refuse)
        store = ProgressStore(tmp_path)
        progress, notice = store.load()
    assert "could not be moved (Permission denied)" in notice
    assert store.save(Progress(current_step=3)) is None
    assert (tmp_path / FILE_NAME).read_text() == '{"version": 5}'


def test_temporary_files_of_killed_runs_are_removed(tmp_path):
    stale = tmp_path / ".progress-k1ll3d00.tmp"
    fresh = tmp_path / ".progress-wr1t1ng0.tmp"  # another run may be writing this one right now
    mine = tmp_path / "notes.tmp"
    for path in (stale, fresh, mine):
        path.write_text("{")
    hour_ago = time.time() - 3600
    os.utime(stale, (hour_ago, hour_ago))
    os.utime(mine, (hour_ago, hour_ago))
    ProgressStore(tmp_path).load()
    assert not stale.exists() and fresh.exists() and mine.exists()
    assert remove_stale_temporaries(tmp_path, now=time.time() + 3600) == 1  # later, the fresh one too


def test_a_save_syncs_the_file_and_then_its_directory(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    ProgressStore(tmp_path).save(Progress(current_step=2))
    assert synced == ["file", "dir"]


# -- the app on such files


def run_app_on(state_dir: Path, size=(80, 24)) -> tuple[int, str]:
    """Start the app (stand-in steps 1-4) on this state; the step shown and the notice."""
    async def run() -> tuple[int, str]:
        app = BatchApp(make_steps(), AppSettings(clock=ManualClock(), cursor_blink=False, state_dir=state_dir))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            return app.screen.query_one(StepHeader).number, app.screen.query_one(NoticeLine).message
    return asyncio.run(run())


@pytest.mark.heavy
@settings(max_examples=examples(12), deadline=None, suppress_health_check=SLOW_OK)
@given(progress_like | json_values)
def test_the_app_opens_on_any_progress_file(data):
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        (state / FILE_NAME).write_text(json.dumps(data))
        number, notice = run_app_on(state)
        assert 1 <= number <= 4
        assert "\n" not in notice


@pytest.mark.parametrize("raw", [b"[" * 200_000, os.urandom(3000), b'{"version": 99}'],
                         ids=["deep", "binary", "newer"])
def test_the_app_opens_with_a_notice_on_a_bad_file(tmp_path, raw):
    (tmp_path / FILE_NAME).write_bytes(raw)
    number, notice = run_app_on(tmp_path)
    assert number == 1 and notice and "\n" not in notice


def test_a_saved_step_that_does_not_exist_is_said(tmp_path):
    ProgressStore(tmp_path).save(Progress(current_step=99, completed={1, 99}))
    number, notice = run_app_on(tmp_path)
    assert number == 1
    assert "step 99, which does not exist" in notice
