"""One figure, one value: on every step's screen at 80x24, every quantity that two views show for
the same run (tokens/s, requests/s, the running batch and its seats, the queue, requests done,
TTFT and TPOT percentiles, the worst gap) reads the same in each, within its rounding.

Each view's text is read as the learner reads it (what it draws at its width); a compare table's
columns are matched to the run each shows (the step's own, the run beside it; a pinned "before"
is a different run and is left out). A prediction's reveal dates its reading ("at t 40.0 s"), so
it is a figure of its own moment, not of the live panes. Where the lesson text states a figure a
view also shows (the gauges' shares, the cache's size), the two are checked too.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from batchtui.widgets.compare import CompareView
from screen_text import screen_text
from run_sentences import Frames
from test_lesson_length import assert_the_lesson_as_shown
from test_steps_in_sight import assert_the_proof_is_in_sight_at_every_size, sizes_for
from tests import shared_steps

LOOKS = (20.0, 5.0)  # simulated seconds run before each look (the first after a guess)

NUMBER = re.compile(r"^(-?[\d,]*\.?\d+)\s*(k|M|ms|s|%)?$")


def parse(shown: str) -> tuple[float, float] | None:
    """A figure as drawn ("1.2k", "8,466", "6.04 ms", "2.1 s") -> (value, half its last digit);
    None for a dash or anything that is not a figure. Times come out in seconds."""
    shown = shown.strip()
    m = NUMBER.match(shown)
    if m is None:
        return None
    digits, unit = m.group(1).replace(",", ""), m.group(2) or ""
    # The last significant digit: a decimal's last, or a whole number's last that is not a
    # trailing zero ("28,000" is stated to the thousand, "28,008" to the unit).
    decimals = len(digits.split(".")[1]) if "." in digits else -(len(digits) - len(digits.rstrip("0")))
    scale = {"k": 1e3, "M": 1e6, "ms": 1e-3, "s": 1.0, "%": 1.0, "": 1.0}[unit]
    return float(digits) * scale, 0.5 * 10.0 ** -decimals * scale


def agree(a: str, b: str) -> bool:
    pa, pb = parse(a), parse(b)
    if pa is None or pb is None:
        return True  # a dash says "not measured yet": nothing to disagree with
    return abs(pa[0] - pb[0]) <= pa[1] + pb[1] + 1e-12


def figures_of(view) -> dict[str, dict[str, str]]:
    """{run: {quantity: figure}} for what one view draws."""
    text = view.build(view.size.width).plain
    out: dict[str, dict[str, str]] = defaultdict(dict)
    if isinstance(view, CompareView):
        sources = (view.left_source, view.right_source)
        for line in text.splitlines()[1:]:
            label = line[:9].strip()
            cells = line[9:]
            half = len(cells) // 2
            for source, cell in zip(sources, (cells[:half], cells[half:])):
                if source == "pinned":
                    continue
                cell = cell.strip()
                if label == "batch" and "/" in cell:
                    out[source]["batch"], out[source]["seats"] = cell.split("/")
                elif label in ("tokens/s", "req/s", "queue", "done", "TTFT p50", "TTFT p99", "TPOT p50",
                               "TPOT p99", "gap max"):
                    out[source][{"gap max": "gap"}.get(label, label)] = cell
        return out
    run = out[view.source]
    name = view.view_name
    if name == "metrics":
        for quantity, pattern in (("tokens/s", r"tokens/s (\S+)"), ("req/s", r"req/s (\S+)"),
                                  ("batch", r"(?<!mean )batch ([\d,]+)"), ("queue", r"queue (\S+)"),
                                  ("done", r"done (\S+)"), ("gap", r"gap max (\S+(?: m?s)?)")):
            m = re.search(pattern, text)
            if m:
                run[quantity] = m.group(1)
        for key in ("TTFT", "TPOT"):
            m = re.search(rf"^{key}\s+(\S+(?: m?s)?)\s+(\S+(?: m?s)?)\s*$", text, re.M)
            if m:
                run[f"{key} p50"], run[f"{key} p99"] = m.group(1), m.group(2)
    elif name == "sparklines":
        for line in text.splitlines():
            label, value = line[:6].strip(), line[-9:].strip()
            quantity = {"tok/s": "tokens/s", "TTFT": "TTFT p50", "TPOT": "TPOT p50", "gap": "gap"}.get(label)
            if quantity:
                run[quantity] = value
    elif name == "seats":
        m = re.search(r" ([\d,]+)/([\d,]+)(?: busy)?\s+(?:queue|q) ([\d,]+)", text.splitlines()[0])
        if m:
            run["batch"], run["seats"], run["queue"] = m.groups()
    elif name == "iteration":
        m = re.search(r"seats ([\d,]+)/([\d,]+)", text)
        if m:
            run["batch"], run["seats"] = m.groups()
        m = re.search(r"waiting ([\d,]+)", text)
        if m:
            run["queue"] = m.group(1)
    return out


def disagreements(screen) -> list[str]:
    seen: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for view in screen.stack.shown():
        for run, figures in figures_of(view).items():
            for quantity, figure in figures.items():
                seen[run, quantity].append((view.view_name, figure))
    problems = []
    for (run, quantity), shown in seen.items():
        for (view_a, a), (view_b, b) in zip(shown, shown[1:]):
            if not agree(a, b):
                problems.append(f"{run} {quantity}: {view_a} says {a}, {view_b} says {b}")
    return problems


# step -> (pattern for the figure in the lesson text, view, pattern for it in that view)
TEXT_FIGURES = {
    1: ((r"bandwidth\s+near\s+([\d.]+)%", "gauges", r"memory bandwidth\s+\S+\s+([\d.]+)%"),
        (r"tensor\s+cores\s+\(the\s+matrix\s+units\)\s+near\s+([\d.]+)%", "gauges", r"tensor cores\s+\S+\s+([\d.]+)%")),
    6: ((r"free\s+KV\s+blocks\*\*,\s+about\s+([\d,]+)", "kv", r"KV [\d,]+/([\d,]+) blocks"),),
    12: ((r"memory,\s+([\d.]+k)\s+tokens\)", "kv", r"([\d.]+k) tok\b"),),
    14: ((r"about\s+\*\*([\d.]+k)\s+tokens\*\*", "kv", r"([\d.]+k) tok\b"),),
}


def text_disagreements(screen) -> list[str]:
    problems = []
    views = {view.view_name: view for view in screen.stack.shown() if view.source == "main"}
    for in_text, name, in_view in TEXT_FIGURES.get(screen.step.number, ()):
        stated = re.search(in_text, screen.step.body_md)
        assert stated, f"step {screen.step.number}: the text no longer states /{in_text}/"
        if name not in views:
            continue
        shown = re.search(in_view, views[name].build(views[name].size.width).plain)
        assert shown, f"step {screen.step.number}: the {name} view shows no /{in_view}/"
        if not agree(stated.group(1), shown.group(1)):
            problems.append(f"the text says {stated.group(1)}, {name} says {shown.group(1)}")
    return problems


@pytest.fixture(scope="module")
def lessons():
    return shared_steps.lessons()


@pytest.mark.parametrize("number", range(1, 21))
async def test_each_step_in_sight_at_every_size_one_value_per_quantity_and_a_lesson_that_fits(
        make_app, lessons, number):
    """One app per step, opened at the size `test_steps_in_sight.sizes_for` gives it: the proof
    in sight at 80x24, 80x23 and 80x22 (test_steps_in_sight.py); then at 80x24 one value per
    quantity at each look; then, the step's activity answered, its lesson as shown fits two
    screens of its pane and its share of words, defines its terms and quotes the run truly
    (test_lesson_length.py)."""
    app = make_app(list(lessons), start_step=number)
    async with app.run_test(size=sizes_for(number)[0]) as pilot:
        screen = app.screen
        step = screen.step
        frames = Frames(screen.query_one("#activity"))  # every frame, for the readings' moments
        await assert_the_proof_is_in_sight_at_every_size(pilot, app)
        if app.size != (80, 24):
            await pilot.resize_terminal(80, 24)
            await pilot.pause()
        if screen.body.zoomed:
            await pilot.press("z")  # (the playground: as it opens, its things to try beside the views)
            await pilot.pause()
        if step.activity.kind == "predict":
            await pilot.press(str(step.activity.params["answer"]))  # (made already: no change)
        for pages in range(2):  # every page of views the step has ("v views 1/2")
            for seconds in LOOKS:
                screen.sim.fast_forward(seconds)
                await pilot.pause()
                await pilot.pause()
                problems = disagreements(screen) + text_disagreements(screen)
                assert not problems, f"step {number}:\n" + "\n".join(problems) + "\n" + screen_text(app)
            await pilot.press("v")
            await pilot.pause()
        await assert_the_lesson_as_shown(pilot, screen, frames)


def test_the_reader_finds_a_disagreement():
    """The check can fail: two figures for one quantity, out of their rounding, are caught."""
    assert agree("1.2k", "1,234") and agree("8.08 ms", "8.1 ms") and agree("-", "3") and agree("28,000", "28,008")
    assert not agree("12k", "9.5k") and not agree("7.78 ms", "8.08 ms") and not agree("22", "24")
