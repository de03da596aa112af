"""Focus you can see and keys that do what the footer says: Escape leaves boxes, arrows never fall
out of the dials into step changes, a checked answer gives the plain keys back, a hint asked for
anywhere comes into sight."""

from __future__ import annotations

import pytest

from batchtui.screens.help import HelpScreen
from batchtui.screens.orientation import OrientationScreen
from batchtui.screens.tutorial import TutorialScreen
from batchtui.widgets.activities.drill import DrillView
from batchtui.widgets.answer_box import AnswerBox
from batchtui.widgets.dial import DialControl, DialEntry
from batchtui.widgets.hint_box import HintBox
from batchtui.widgets.key_bar import KeyBar
from batchtui.widgets.step_header import StepHeader
from screen_text import screen_text
from tests import shared_steps


@pytest.fixture(scope="module")
def lessons():
    return shared_steps.lessons()


def footer(app) -> str:
    return screen_text(app).rstrip("\n").split("\n")[-1]


async def test_escape_leaves_the_answer_box_and_the_plain_keys_work_again(make_app, lessons):
    app = make_app(list(lessons), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab")
        assert isinstance(app.screen.focused, AnswerBox)
        assert "esc leave" in footer(app)
        await pilot.press("escape")
        assert app.screen.focused.id == "lesson-pane"
        before = app.screen.sim.time_scale
        await pilot.press("plus")  # a simulation key again, not a character in the box
        assert app.screen.sim.time_scale > before
        assert app.screen.query_one(AnswerBox).value == ""


async def test_escape_cancels_a_dial_entry_then_leaves_the_dials(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        engine = app.screen.sim.engine
        await pilot.press("tab", "enter")
        assert isinstance(app.screen.focused, DialEntry)
        await pilot.press(*"33", "escape")
        assert isinstance(app.screen.focused, DialControl)  # back on the dial, nothing applied
        assert engine.scenario.workload.request_rate == 20.0
        assert not app.screen.query(DialEntry)
        await pilot.press("escape")
        assert app.screen.focused.id == "lesson-pane"
        assert "esc lesson" not in footer(app)


async def test_a_checked_answer_gives_the_keys_back_to_the_lesson(make_app, lessons):
    app = make_app(list(lessons), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        drill = app.screen.query_one(DrillView)
        await pilot.press("tab", *f"{drill.question.answer:.1f}", "enter")
        await pilot.pause()
        assert drill.question.solved
        assert app.screen.focused.id == "lesson-pane"
        box = app.screen.query_one(AnswerBox)
        typed = box.value
        await pilot.press("plus", "full_stop")
        assert box.value == typed  # "37+++" no more: the keys went to the simulation
        assert app.screen.sim.engine.iteration >= 1


async def test_a_wrong_answer_keeps_the_box_for_another_try(make_app, lessons):
    app = make_app(list(lessons), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", "1", "enter")
        await pilot.pause()
        assert isinstance(app.screen.focused, AnswerBox)


async def test_arrows_never_fall_out_of_the_dials_into_a_step_change(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        dials = list(app.screen.query(DialControl))
        await pilot.press("tab", "down", "down", "down")  # two dials: stays on the last one
        assert app.screen.focused is dials[-1]
        seats = dials[-1].value
        await pilot.press("left")  # turns that dial; the step stays
        assert app.screen.query_one(StepHeader).number == 1
        assert dials[-1].value == seats - 1
        await pilot.press("up", "up", "up")
        assert app.screen.focused is dials[0]
        await pilot.press("right")
        assert app.screen.query_one(StepHeader).number == 1


async def test_a_choice_dial_s_help_line_follows_the_dial(make_app, lessons):
    """At 80x23 (the help in the status line) and 80x24: the focused choice dial's place moves
    with each key ("2 of 5" once the GPU dial is turned to the H200); it stayed at "1 of 5"
    until focus moved."""
    for size in ((80, 23), (80, 24)):
        app = make_app(list(lessons), start_step=19)
        async with app.run_test(size=size) as pilot:
            await pilot.press("tab")  # the GPU dial, at the first of its five GPUs
            await pilot.pause()
            assert "1 of 5" in screen_text(app)
            await pilot.press("right")
            await pilot.pause()
            text = screen_text(app)
            assert "h200" in text and "2 of 5" in text and "1 of 5" not in text, text
            await pilot.press("right", "right", "left")  # in a burst: each lands on the dial
            await pilot.pause()
            text = screen_text(app)
            assert "3 of 5" in text and app.screen.sim.scenario.gpu == "a100-80gb", text


async def test_the_focused_dial_and_pane_are_marked_without_colour(make_app):
    for ascii_only, mark, bar in ((False, "▸", "▎"), (True, ">", "|")):
        app = make_app(ascii_only=ascii_only)
        async with app.run_test(size=(80, 24)) as pilot:
            lines = screen_text(app).split("\n")
            assert lines[2].startswith(bar)  # the lesson pane has the keys
            assert not any(mark + "Request rate" in line for line in lines)
            await pilot.press("tab")
            lines = screen_text(app).split("\n")
            assert not lines[2].startswith(bar)
            assert any(mark + "Request rate" in line for line in lines)


async def test_a_hint_asked_for_after_scrolling_comes_into_sight(make_app, lessons):
    app = make_app(list(lessons), start_step=9)  # a long text, a drill under it
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.screen.query_one("#lesson-pane")
        await pilot.press("end")
        await pilot.press("home")
        assert pane.scroll_y == 0
        await pilot.press("h")
        await pilot.pause()
        hints = app.screen.query_one(HintBox)
        assert hints.shown == 1
        top, bottom = pane.region.y, pane.region.bottom
        assert top <= hints.region.y and hints.region.bottom <= bottom, (hints.region, pane.region)


@pytest.mark.parametrize("number", [1, 2, 7, 18, 20])
async def test_the_footer_always_offers_help_at_80_columns(make_app, lessons, number):
    app = make_app(list(lessons), start_step=number)
    async with app.run_test(size=(80, 24)) as pilot:
        assert "? help" in footer(app)
        await pilot.press("tab")
        assert "help" in footer(app)


async def test_orientation_on_first_launch_closes_with_any_key_and_comes_back_with_help(make_app):
    app = make_app(first_launch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        assert isinstance(app.screen, OrientationScreen)
        text = screen_text(app)
        assert "space" in text and "tab" in text and "Press any key" in text
        assert not app.tutorial.sim.running  # nothing runs (or redraws) behind it
        await pilot.press("n")  # closes it, and only that
        assert isinstance(app.screen, TutorialScreen)
        assert app.screen.query_one(StepHeader).number == 1
        assert app.screen.sim.running  # the step runs, as it would have
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "the lesson and its activity" in screen_text(app)

    again = make_app()  # the progress file now exists: no orientation
    async with again.run_test(size=(80, 24)):
        assert isinstance(again.screen, TutorialScreen)


async def test_help_lists_every_key_of_the_table(make_app):
    from batchtui import keys

    app = make_app()
    async with app.run_test(size=(80, 100)) as pilot:  # tall enough for the whole help at once
        await pilot.press("question_mark")
        text = screen_text(app)
        for key in keys.KEYS:
            assert app.words(key.help)[:30] in text, key.id


async def settled(pilot, done, tries: int = 400) -> None:
    """Waits on the app's state, not on time: Textual's `pause` returns once the process seems
    idle (it used under a twentieth of the wall clock for 20 ms), which on a busy machine, the
    process waiting for a core, it seems before the layout a key asked for is done (the view
    stack's resize, which sets its columns, is handled after it)."""
    for _ in range(tries):
        if done():
            return
        await pilot.pause()


async def test_zoom_gives_the_simulation_the_screen_and_v_pages_the_views(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", "n", "n")  # the stand-in step that shows every view
        screen = app.screen
        stack = screen.stack
        await settled(pilot, lambda: "views 1/" in footer(app))
        assert stack.page_count > 1
        first = [v.view_name for v in stack.shown()]
        assert "views 1/" in footer(app)
        await pilot.press("v")
        await settled(pilot, lambda: "views 2/" in footer(app))
        second = [v.view_name for v in stack.shown()]
        assert second and not set(first) & set(second)
        assert "views 2/" in footer(app)
        await pilot.press("z")
        await settled(pilot, lambda: stack.has_class("-two-columns") and "unzoom" in footer(app))
        assert not screen.query_one("#lesson-pane").display
        assert stack.has_class("-two-columns")
        assert "unzoom" in footer(app)
        await pilot.press("z")
        await settled(pilot, lambda: not stack.has_class("-two-columns"))
        assert screen.query_one("#lesson-pane").display and not stack.has_class("-two-columns")


async def test_a_notice_gives_way_to_the_goal_at_the_next_key(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        assert "first step" in screen_text(app)
        assert not app.screen.query_one("#goal").display
        await pilot.press("full_stop")
        await pilot.pause()
        assert app.screen.query_one("#goal").display
        assert "first step" not in screen_text(app)
        assert isinstance(app.screen.query_one(KeyBar), KeyBar)
