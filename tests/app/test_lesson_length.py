"""Thirty-five minutes, as promised, measured from what the learner reads: each step's lesson
pane once its activity is answered (a prediction's result in, a drill's worked answer shown, a
reading answered, a challenge broken) holds its text, the activity (question, choices, the
result, a verdict, a worked answer) and the reveal. Read page by page at 80x24, as drawn:

- it fits two screens of the lesson pane;
- its words stay within the step's share of 3,500 (`SHOWN_WORDS`, which add up to at most
  3,500: the whole lesson, STEPS.md); hints, read only when asked for, are not counted;
- every term is defined where the step first uses it, or taught before (`steps.glossary`), in
  the pane and the goal line as drawn;
- every figure it quotes of the live run is live or dated, and true of its moment
  (`run_sentences.py`).

The per-step measure (`assert_the_lesson_as_shown`) runs in test_one_value.py's test of each
step, on the app opened there."""

from __future__ import annotations

import re

import pytest

from batchtui.widgets.goal_bar import GoalBar
from run_sentences import Frames, given_texts, run_sentence_problems
from screen_text import screen_text
from sim.reports import EngineSnapshot, MetricsView
from steps import glossary
from tests import shared_steps

MAX_WORDS = 3500
MAX_SCREENS = 2
AFTER_S = 30.0
"""Simulated seconds run once the activity is answered: the live figures move on."""

SHOWN_WORDS = {
    1: 198, 2: 170, 3: 164, 4: 120, 5: 187, 6: 179, 7: 187, 8: 183, 9: 166, 10: 170,
    11: 169, 12: 112, 13: 195, 14: 159, 15: 174, 16: 193, 17: 192, 18: 218, 19: 209, 20: 152,
}
"""Each step's words as shown, at most: its share of the whole lesson's 3,500."""

WORD = re.compile(r"\{\{[^}]*\}\}|\S*[A-Za-z0-9]\S*")
"""A word: a run of characters holding a letter or a digit (a table's rules, a formula's signs
and the pane's scroll bar are not words; a template, in raw text, is one figure)."""


def words(text: str) -> int:
    return len(WORD.findall(text))


def test_the_shares_add_up_to_the_whole_lesson_of_3500_words():
    assert set(SHOWN_WORDS) == set(range(1, 21))
    assert sum(SHOWN_WORDS.values()) <= MAX_WORDS


def test_the_word_count_counts_words():
    assert words("One {{prefill_ms}} ms + 255 × {{tpot_ms}} | --- |") == 5
    assert words("|---|---|\n| a | b |\n ▇ ") == 2


@pytest.fixture(scope="module")
def lessons():
    return shared_steps.lessons()


async def answer(pilot, screen) -> None:
    """Answer the step's activity as a learner who gets it right would (a drill: the worked
    answer; a challenge: "show me", run until it breaks; a prediction: the run until its result),
    then run on `AFTER_S` simulated seconds."""
    step = screen.step
    kind = step.activity.kind
    view = screen.query_one("#activity").view
    if kind in ("predict", "read"):
        await pilot.press(str(step.activity.params.get("answer", 1)))
    elif kind in ("drill", "break_it"):
        await pilot.press("ctrl+d")
    await pilot.pause()
    if kind == "predict":
        screen.sim.fast_forward(1.0)  # the run's first frame after the guess: the wait starts
        await pilot.pause()
        screen.sim.fast_forward(float(step.activity.params.get("watch_s", 20.0)) + 1.0)
    for _ in range(36):  # a challenge broken within three minutes, seen every five seconds
        if kind != "break_it" or view.verdict is not None:
            break
        screen.sim.fast_forward(5.0)
        await pilot.pause()
    assert kind != "break_it" or view.verdict is not None, f"step {step.number}: show me did not break it"
    await pilot.pause()
    screen.sim.fast_forward(AFTER_S)
    await pilot.pause()
    await pilot.pause()


async def pane_text(pilot, screen) -> tuple[str, int, int]:
    """The lesson pane's whole content as drawn, read a page at a time: (its lines, the lines
    it takes, the pane's height)."""
    pane = screen.query_one("#lesson-pane")
    region, height, total = pane.scrollable_content_region, pane.size.height, pane.virtual_size.height
    lines: dict[int, str] = {}
    for y in range(0, max(1, total), height):
        pane.scroll_to(y=y, animate=False)
        await pilot.pause()
        top = round(pane.scroll_offset.y)
        rows = screen_text(screen.app).splitlines()
        for i in range(height):
            lines[top + i] = rows[region.y + i][region.x:region.right].rstrip()
    return "\n".join(lines[i] for i in sorted(lines) if i < total), total, height


async def assert_the_lesson_as_shown(pilot, screen, frames: Frames) -> None:
    """Answer the step's activity (`answer`), run on, then read its lesson pane at 80x24 and
    check the four things the module says. Every step is measured this way on the app that
    test_one_value.py opens for it (one app per step: an app and its step cost a few tenths of
    a second of CPU to open); `frames` has recorded every frame since it opened."""
    number = screen.step.number
    await answer(pilot, screen)
    if screen.step.reveal_md:
        assert screen.query_one("#reveal").display, f"step {number}: the reveal is not shown"
    text, seen, room = await pane_text(pilot, screen)
    assert room > 0 and seen > 0, f"step {number}: the lesson pane is not shown at 80x24"
    assert seen <= MAX_SCREENS * room, f"step {number}: the lesson takes {seen} lines, {seen / room:.1f} screens of {room}"
    shown = words(text)
    assert shown <= SHOWN_WORDS[number], f"step {number}: {shown} words shown, its share is {SHOWN_WORDS[number]}"
    goal = screen.query_one(GoalBar)
    goal_line = f"{goal.ask} {goal.note}"
    problems = glossary.problems({number: f"{text}\n\n{goal_line}"})
    view = screen.query_one("#activity").view
    problems += run_sentence_problems(text, given_texts(screen.step, view), frames)
    assert not problems, f"step {number}:\n" + "\n".join(problems) + "\n\n" + text


async def test_the_length_check_catches_a_lesson_longer_than_two_screens(make_app, lessons):
    """The check can fail: step 12's lesson, repeated until it is three screens long, is caught."""
    from dataclasses import replace

    long = [replace(step, body_md=step.body_md * 4) if step.number == 12 else step for step in lessons]
    app = make_app(long, start_step=12)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        frames = Frames(app.screen.query_one("#activity"))
        with pytest.raises(AssertionError, match="screens of"):
            await assert_the_lesson_as_shown(pilot, app.screen, frames)


def snap(time: float, queue_len: int, **metrics) -> EngineSnapshot:
    metrics.setdefault("completed", 100)
    return EngineSnapshot(time=time, iteration=100, batching="continuous", seats=(), max_num_seqs=256,
                          queue_len=queue_len, running=256, kv_blocks_used=100, kv_blocks_usable=28008,
                          kv_blocks_by_request=(), last=None, metrics=MetricsView(**metrics))


def test_a_frozen_present_tense_figure_is_caught_and_a_dated_one_is_held_to_its_moment():
    """Issue 37's step 8: "TTFT p99 is 2.61 s with 238 requests waiting" beside a live 114.7 s and
    a queue of 6,280 fails; the same figures dated by the frame they were read from pass; dated
    by the wrong moment, they fail; a lesson's own sentence is not a reading."""
    frames = Frames()
    frames.add(snap(41.0, 238, ttft_p99=2.61))
    frames.add(snap(71.0, 6280, ttft_p99=114.7))
    frozen = "Broken. TTFT p99 is 2.61 s with 238 requests waiting, while the engine runs."
    found = run_sentence_problems(frozen, [], frames)
    assert len(found) == 2 and "TTFT p99 2.61 s: the run reads 114.7 now" in found[0], found
    assert run_sentence_problems("At t 41 s TTFT p99 was 2.61 s with 238 requests waiting.", [], frames) == []
    late = run_sentence_problems("At t 71 s TTFT p99 was 2.61 s with 238 requests waiting.", [], frames)
    assert len(late) == 2 and "then" in late[0]
    assert run_sentence_problems("At t 50 s TTFT p99 was 2.61 s.", [], frames)[0].startswith("no frame")
    assert run_sentence_problems(frozen, ["Broken. TTFT p99 is **2.61 s** with 238 requests\nwaiting, while "
                                          "the engine runs."], frames) == []
