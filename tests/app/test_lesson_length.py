"""Thirty-five minutes, as promised: each step's lesson, its text and its reveal, takes at most
two screens of the lesson pane at 80x24, measured as the app draws them once the activity is
answered (the activity panel between them, a drill's question and worked answer, is the learner's
own work and not counted), and the whole lesson reads in about 3,500 words (STEPS.md).

The per-step measure (`assert_the_lesson_fits_two_screens_of_its_pane`) runs in
test_one_value.py's test of each step, on the app opened there."""

from __future__ import annotations

import re

import pytest

import steps
from batchtui.activity_kinds import PLAYGROUND_MD
from steps import figures
from steps.activities import CHEAT_SHEET_MD
from tests import shared_steps

MAX_WORDS = 3500
MAX_SCREENS = 2

WORD = re.compile(r"\{\{[^}]*\}\}|\S*[A-Za-z0-9]\S*")
"""A word: a template (one figure) or a run of characters holding a letter or a digit (a table's
rules and a formula's signs are not words)."""


def words(text: str) -> int:
    return len(WORD.findall(text))


def lesson_words() -> dict[str, int]:
    """Words a learner reads, per lesson file (text, reveal, hints, question, choices, explain),
    and the cheat sheet's and the playground's activity wording."""
    counts = {}
    for path in steps.lesson_files():
        data, body = steps.read_lesson(path)
        counts[path.name] = sum(words(text) for _, text in figures.wording(data, body))
    counts["cheat sheet"] = words(CHEAT_SHEET_MD)
    counts["playground notes"] = words(PLAYGROUND_MD)
    return counts


def test_the_whole_lesson_reads_in_about_3500_words():
    counts = lesson_words()
    total = sum(counts.values())
    assert total <= MAX_WORDS, f"{total} words: " + ", ".join(f"{k} {v}" for k, v in counts.items())


def test_the_word_count_counts_words():
    assert words("One {{prefill_ms}} ms + 255 × {{tpot_ms}} | --- |") == 5
    assert words("|---|---|\n| a | b |") == 2


@pytest.fixture(scope="module")
def lessons():
    return shared_steps.lessons()


async def answer(pilot, screen) -> None:
    """Answer the step's activity as a learner who gets it right would (a drill: the worked
    answer), and run the simulation until a prediction's verdict is in."""
    step = screen.step
    kind = step.activity.kind
    if kind in ("predict", "read"):
        answer = step.activity.params.get("answer", 1)
        await pilot.press(str(answer))
    elif kind == "drill":
        await pilot.press("ctrl+d")
    await pilot.pause()
    if kind == "predict":
        screen.sim.fast_forward(1.0)  # the run's first frame after the guess: the wait starts
        await pilot.pause()
        screen.sim.fast_forward(float(step.activity.params.get("watch_s", 20.0)) + 1.0)
    await pilot.pause()
    await pilot.pause()


async def assert_the_lesson_fits_two_screens_of_its_pane(pilot, screen) -> None:
    """Answer the step's activity (`answer`), then measure its text and reveal against the lesson
    pane at 80x24. Every step is measured this way on the app that test_one_value.py opens for
    that step, at 80x24 by then (one app per step for its three checks: an app and its step cost
    a few tenths of a second of CPU to open)."""
    number = screen.step.number
    await answer(pilot, screen)
    pane = screen.query_one("#lesson-pane")
    if screen.step.reveal_md:
        assert screen.query_one("#reveal").display, f"step {number}: the reveal is not shown"
    text, reveal = screen.query_one("#lesson"), screen.query_one("#reveal")
    seen = text.outer_size.height + (reveal.outer_size.height if reveal.display else 0)
    room = pane.size.height
    assert room > 0 and seen > 0, f"step {number}: the lesson pane is not shown at 80x24"
    assert seen <= MAX_SCREENS * room, (
        f"step {number}: text and reveal take {seen} lines, {seen / room:.1f} screens of {room}")


async def test_the_length_check_catches_a_lesson_longer_than_two_screens(make_app, lessons):
    """The check can fail: step 3's lesson, repeated until it is three screens long, is caught."""
    from dataclasses import replace

    long = [replace(step, body_md=step.body_md * 6) if step.number == 3 else step for step in lessons]
    app = make_app(long, start_step=3)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        with pytest.raises(AssertionError, match="screens of"):
            await assert_the_lesson_fits_two_screens_of_its_pane(pilot, app.screen)
