"""Every step at 80x24, 80x23 and 80x22: after its scenario has run (a prediction made first, where it asks one),
the views its claim needs are in sight without scrolling or paging, with live numbers in them.
The per-step check (`assert_the_proof_is_in_sight_at_every_size`) runs in test_one_value.py's
test of each step, on the app opened there.

"In sight" means what the learner sees: the view is drawn, on the page shown, and its whole
region lies inside the terminal. The words checked are the ones that carry each step's proof
(STEPS.md), read from the screen the learner reads.
"""

from __future__ import annotations

import re

import pytest

from batchtui.widgets.dial_list import DialList
from batchtui.widgets.goal_bar import GoalBar
from batchtui.widgets.key_bar import KeyBar
from screen_text import screen_text
from tests import shared_steps

SECONDS = 20.0  # simulated seconds run before looking: queues and batches have formed

# step -> (views that must be in sight, patterns that must be on the screen)
NEEDS: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {
    1: (("seats", "gauges", "compare", "sparklines"),
        (r"sequential [01]/1 busy", r"unused 63", r"memory bandwidth .* (79|80|81)%", r"tensor cores .* 0\.\d%",
         r"before\s+now", r"TTFT p99\s+[\d.]+ m?s\s+[\d.]+ s")),
    2: (("gauges", "iteration", "metrics"), (r"memory bandwidth", r"tokens/s [\d.]+k?", r"√\(W")),
    3: (("seats", "metrics", "sparklines"), (r"padded \d+", r"padding [1-9]\d*%", r"TTFT\s+[\d.]+ m?s")),
    4: (("seats", "compare_seats", "compare"),
        (r"embedder\s+chat LLM", r"padding\s+0%\s+[1-9]\d*%", r"TTFT p99\s+[\d.]+ ms\s+[\d.]+ m?s")),
    5: (("seats", "compare_seats", "compare"),
        (r"continuous\s+static", r"padding\s+0%\s+[1-9]\d*%", r"TTFT p99\s+[\d.]+ ms\s+[\d.]+ m?s",
         r"tokens/s\s+[\d.]+k?\s+[\d.]+k?")),
    6: (("iteration", "seats"), (r"decode \d+ \+ ▓ prefill \d+", r"limit: ", r"seats \d+/64", r"= [\d.]+ ms")),
    7: (("curve",), (r"batch 1-\d+: time/token", r"TTFT p99 vs req/s", r"◆ knee: batch", r"◆ knee: [\d.]+ req/s")),
    8: (("metrics", "sparklines", "seats"), (r"TTFT\s+[\d.]+ m?s", r"tokens/s [\d.]+k", r"queue \d+")),
    9: (("seats", "metrics"), (r"continuous \d+/256", r"mean batch [\d.]+")),
    10: (("sparklines", "iteration", "metrics"), (r"gap\s+\S+\s+[\d.]+ m?s", r"gap max [\d.]+ m?s", r"limit: ")),
    11: (("sparklines", "compare"), (r"Token budget 8,192 → 512", r"before\s+now", r"gap max\s+[\d.]+ ms\s+[\d.]+ ms",
                                     r"TTFT p99\s+[\d.]+ m?s\s+[\d.]+ m?s")),
    12: (("iteration", "kv", "metrics"), (r"limit: ", r"KV [\d,]+/[\d,]+ blocks", r"TPOT\s+[\d.]+ ms")),
    13: (("seats", "compare", "sparklines"),
         (r"continuous \d+/32", r"Seats 256 → 32", r"before\s+now", r"queue\s+\d+\s+[1-9]",
          r"TPOT p50\s+[\d.]+ ms\s+[\d.]+ ms")),
    14: (("kv", "seats", "metrics"), (r"KV [\d,]+/28,008 blocks", r"preempted", r"continuous \d+/256")),
    15: (("kv", "metrics"), (r"KV [\d,]+/[\d,]+ blocks",)),
    16: (("curve",), (r"TTFT p99 vs req/s", r"◆ knee", r"saturated [\d.]+ req/s", r"SLO 500 ms")),
    17: (("compare", "seats", "compare_seats"),
         (r"512 seats\s+64 seats", r"tokens/s\s+[\d.]+k\s+[\d.]+k", r"512 seats \d+/512", r"64 seats \d+/64")),
    18: (("metrics", "sparklines"), (r"TTFT\s+[\d.]+ ms\s+[\d.]+ m?s", r"TPOT\s+[\d.]+ ms\s+[\d.]+ ms",
                                     r" chat\s+[\d.]+ ms", r" jobs\s+[\d.]+ ms")),
    19: (("metrics",), (r"tokens/s [\d.]+k", r"Ceiling = bandwidth")),
    20: (("seats", "kv", "iteration", "metrics", "sparklines"),
         (r"continuous \d+/256", r"KV [\d,]+/", r"limit: ", r"tokens/s [\d.]+k", r"gap\s+\S+")),
}


@pytest.fixture(scope="module")
def lessons():
    return shared_steps.lessons()


def test_every_step_is_listed():
    assert set(NEEDS) == set(range(1, 21))


def in_sight(app, view) -> bool:
    screen = app.screen.region
    region = view.region
    return view.display and region.area > 0 and screen.contains_region(region)


SIZES = ((80, 24), (80, 23), (80, 22))
"""80x24; tmux's status line makes it an 80x23 pane, a second status line (or GNU screen's
hardstatus) 80x22: the smallest the tutorial runs at."""


def sizes_for(number: int) -> list[tuple[int, int]]:
    """The three sizes in the order step `number` is seen at: it opens at one (each size is the
    first for a third of the steps) and the terminal is then resized to the others, as a learner
    who moves a tmux split would. One run per step serves all three: the state looked at is the
    same, only the layout changes, and both ways into a size (opened there, resized to it) are
    checked."""
    first = number % len(SIZES)
    return list(SIZES[first:] + SIZES[:first])


def test_every_size_opens_some_steps_and_is_resized_to_by_others():
    firsts = {sizes_for(n)[0] for n in NEEDS}
    later = {size for n in NEEDS for size in sizes_for(n)[1:]}
    assert firsts == later == set(SIZES)


async def assert_the_proof_is_in_sight_at_every_size(pilot, app) -> None:
    """On an app just opened at `sizes_for(step)[0]`: run the step's scenario (a prediction made
    first), then look at each size in turn. Every step is looked at this way on the app that
    test_one_value.py opens for it (one app per step for the three checks: an app and its step
    cost a few tenths of a second of CPU to open); it leaves the app at the last size, the
    playground zoomed."""
    screen = app.screen
    step = screen.step
    number = step.number
    order = sizes_for(number)
    assert app.size == order[0]
    seconds = SECONDS
    if step.activity.kind == "predict":
        await pilot.press(str(step.activity.params["answer"]))  # the run starts with a guess
        screen.sim.fast_forward(1.0)  # and a plot that answers it shows with the result
        await pilot.pause()
        seconds = max(SECONDS, float(step.activity.params.get("watch_s", 20.0)))
    if step.activity.kind == "playground":
        await pilot.press("z")  # it opens on its things to try; z shows every view
    screen.sim.fast_forward(seconds)
    screen.say("")  # a notice stands in for the goal line until the next key
    await pilot.pause()
    await pilot.pause()
    for size in order:
        if size != order[0]:
            await pilot.resize_terminal(*size)
            await pilot.pause()
        assert app.size == size
        check_in_sight(app, screen, number, "%dx%d" % size)


async def test_the_in_sight_check_catches_a_view_out_of_sight(make_app, lessons):
    """The check can fail: step 5 told to need a view it does not show is caught."""
    app = make_app(list(lessons), start_step=5)
    async with app.run_test(size=sizes_for(5)[0]) as pilot:
        needs = dict(NEEDS)
        NEEDS[5] = (NEEDS[5][0] + ("kv",), NEEDS[5][1])
        try:
            with pytest.raises(AssertionError, match="kv is not on the page shown"):
                await assert_the_proof_is_in_sight_at_every_size(pilot, app)
        finally:
            NEEDS.update(needs)


def check_in_sight(app, screen, number: int, size: str) -> None:
    where = f"step {number} at {size}"
    views, patterns = NEEDS[number]
    shown = {view.view_name if view.source == "main" else "compare_seats": view for view in screen.stack.shown()}
    for name in views:
        assert name in shown, f"{where}: {name} is not on the page shown ({sorted(shown)})"
        assert in_sight(app, shown[name]), f"{where}: {name} is not wholly in sight"
    for bar in (GoalBar, KeyBar, DialList):
        widget = screen.query_one(bar)
        assert in_sight(app, widget), f"{where}: the {bar.__name__} is not wholly in sight"
    text = screen_text(app)
    for pattern in patterns:
        assert re.search(pattern, text), f"{where}: /{pattern}/ not on screen:\n{text}"


async def test_a_lesson_that_says_it_fits_one_screen_does_at_80x24(make_app, lessons):
    """The cheat sheet said "Everything on one screen" and took three: a step may only say so
    if its lesson pane needs no scrolling."""
    for step in lessons:
        if "one screen" not in step.body_md:
            continue
        app = make_app(list(lessons), start_step=step.number)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            pane = app.screen.query_one("#lesson-pane")
            assert pane.max_scroll_y == 0, f"step {step.number} says 'one screen' and scrolls {pane.max_scroll_y} lines"
