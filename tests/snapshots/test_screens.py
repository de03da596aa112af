"""What the learner sees, screen by screen. Update with --snapshot-update after looking at the
new SVGs (tests/snapshots/__snapshots__/)."""

from __future__ import annotations

import pytest

from snapshot_steps import advance

SECONDS_SHOWN = 20.0  # simulated seconds run before each screenshot: queues and batches formed


@pytest.mark.parametrize("number", range(1, 21))
def test_every_step_at_80x24(snap_compare, tutorial, number):
    assert snap_compare(tutorial(number), terminal_size=(80, 24), run_before=advance(SECONDS_SHOWN))


@pytest.mark.parametrize("number", [1, 6, 7, 14])
def test_some_steps_at_120x40(snap_compare, tutorial, number):
    assert snap_compare(tutorial(number), terminal_size=(120, 40), run_before=advance(SECONDS_SHOWN))


def test_step_6_at_200x60(snap_compare, tutorial):
    assert snap_compare(tutorial(6), terminal_size=(200, 60), run_before=advance(SECONDS_SHOWN))


class TestOverlays:
    def test_help(self, snap_compare, tutorial):
        # ? opens the key table over the lesson.
        assert snap_compare(tutorial(1), terminal_size=(80, 24), press=["question_mark"])

    def test_table_of_contents(self, snap_compare, tutorial):
        # t opens the contents with the current step (5) highlighted.
        assert snap_compare(tutorial(5), terminal_size=(80, 24), press=["t"])

    def test_too_small(self, snap_compare, tutorial):
        assert snap_compare(tutorial(1), terminal_size=(60, 20))


class TestSpecialSteps:
    def test_cheat_sheet(self, snap_compare, tutorial):
        # c jumps to the cheat sheet from anywhere.
        assert snap_compare(tutorial(3), terminal_size=(80, 24), press=["c"])

    def test_playground(self, snap_compare, tutorial):
        # g jumps to the playground; it shows every view.
        assert snap_compare(tutorial(3), terminal_size=(120, 40), press=["g"], run_before=advance(SECONDS_SHOWN))


class TestAscii:
    def test_ascii_step_6(self, snap_compare, tutorial):
        assert snap_compare(tutorial(6, ascii_only=True), terminal_size=(80, 24), run_before=advance(SECONDS_SHOWN))

    def test_ascii_playground(self, snap_compare, tutorial):
        assert snap_compare(tutorial(20, ascii_only=True), terminal_size=(120, 40), run_before=advance(SECONDS_SHOWN))
