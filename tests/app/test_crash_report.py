"""The crash report: what a maintainer needs, capped, never a dump of local variables; the line
the learner reads."""

from __future__ import annotations

import os
import time
import traceback

from batchtui import crash


def raise_and_catch(message: str, depth: int = 0) -> BaseException:
    # Two functions calling each other: a traceback Python cannot fold into "repeated N times".
    # The second one's long name makes a deep stack's traceback far longer than a report may be,
    # whatever the length of the checkout's path.
    def dive(n: int) -> None:
        big_local = "L" * 100_000  # noqa: F841 - must never reach the report
        if n:
            swim_down_one_more_level_of_a_stack_deep_enough_to_need_cutting_in_a_crash_report(n - 1)
        raise ValueError(message)

    def swim_down_one_more_level_of_a_stack_deep_enough_to_need_cutting_in_a_crash_report(n: int) -> None:
        dive(n)

    try:
        dive(depth)
    except ValueError as exc:
        return exc
    raise AssertionError("unreachable")


def test_a_report_has_the_traceback_and_context_but_no_locals(tmp_path):
    error = raise_and_catch("the step table was empty")
    path = crash.save_report(tmp_path, error, {"screens": "Screen > TutorialScreen", "progress": "step 4"})
    text = path.read_text()
    assert path.parent == tmp_path and path.name.startswith("crash-")
    assert "ValueError: the step table was empty" in text and "in dive" in text
    assert "screens: Screen > TutorialScreen" in text and "versions: batchtui" in text
    assert "LLLL" not in text


def test_a_huge_message_and_a_deep_stack_are_capped_keeping_the_end(tmp_path):
    error = raise_and_catch("M" * 1_000_000, depth=400)
    full = "".join(traceback.format_exception(error))
    assert len(full) > 2 * crash.MAX_REPORT_CHARS  # (the test's own premise)
    text = crash.format_report(error, {"progress": "completed " + "9, " * 100_000})
    assert len(text) <= crash.MAX_REPORT_CHARS
    assert "more characters]" in text  # the message and the context line were cut, and said so
    assert "earlier lines of the traceback left out" in text
    assert text.rstrip().splitlines()[-1].startswith("ValueError: MMMM")  # the error itself is kept


def test_only_the_newest_reports_are_kept(tmp_path):
    for n in range(crash.KEEP_REPORTS + 5):
        old = tmp_path / f"crash-2020010{n % 10}-00000{n}.txt"
        old.write_text("old")
        os.utime(old, (time.time() - 1000 + n, time.time() - 1000 + n))
    newest = crash.save_report(tmp_path, raise_and_catch("x"), {})
    left = sorted(tmp_path.glob("crash-*.txt"))
    assert len(left) == crash.KEEP_REPORTS and newest in left


def test_the_line_says_where_the_report_is_or_why_there_is_none(tmp_path):
    line = crash.record(tmp_path, raise_and_catch("boom"), {})
    assert "\n" not in line and "unexpected error (ValueError)" in line and "progress is saved" in line
    assert str(next(tmp_path.glob("crash-*.txt"))) in line

    blocker = tmp_path / "file"
    blocker.write_text("")
    line = crash.record(blocker / "state", raise_and_catch("boom " * 100), {}, crash.PROGRESS_NOT_SAVED)
    assert "\n" not in line and "no report could be written" in line and "Progress could not be saved" in line
    assert len(line) < 400


def test_a_failed_worker_reports_the_workers_own_traceback():
    from textual.worker import WorkerFailed

    inner = raise_and_catch("no such widget")
    try:
        raise WorkerFailed(inner)
    except WorkerFailed as exc:
        text = crash.format_report(exc, {})
    assert "WorkerFailed" in text and "The worker's error:" in text and "in dive" in text


def test_a_crash_before_the_progress_is_read_writes_nothing_over_it(tmp_path):
    """The app holds a blank default until the progress file is read: an error before that must
    not save it over the learner's file, nor say the progress is saved."""
    from types import SimpleNamespace

    from batchtui.ending import Ending
    from batchtui.progress import Progress, ProgressStore

    store = ProgressStore(tmp_path)
    store.save(Progress(current_step=7, completed={1, 2, 3}))
    before = store.path.read_bytes()
    app = SimpleNamespace(store=ProgressStore(tmp_path), progress=Progress(), screen_stack=[], size=SimpleNamespace(width=80, height=24))
    ending = Ending(app)
    ending.unexpected(raise_and_catch("the theme could not be set"))
    assert store.path.read_bytes() == before
    assert crash.PROGRESS_UNTOUCHED in ending.crash_message and "progress is saved" not in ending.crash_message
    assert "progress: not read yet" in next(tmp_path.glob("crash-*.txt")).read_text()

    # Once read, the progress is saved with the report, as the line says.
    app = SimpleNamespace(store=ProgressStore(tmp_path), screen_stack=[], size=SimpleNamespace(width=80, height=24))
    app.progress, _ = app.store.load()
    app.progress.current_step = 8
    ending = Ending(app)
    ending.unexpected(raise_and_catch("later"))
    assert crash.PROGRESS_SAVED in ending.crash_message
    assert ProgressStore(tmp_path).load()[0].current_step == 8
