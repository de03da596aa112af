"""Moving through the steps with keys alone."""

from __future__ import annotations

from batchtui.screens.contents import ContentsScreen
from batchtui.screens.help import HelpScreen
from batchtui.screens.tutorial import TutorialScreen
from batchtui.widgets.hint_box import HintBox
from batchtui.widgets.notice_line import NoticeLine
from batchtui.widgets.step_header import StepHeader


def header(app) -> StepHeader:
    return app.screen.query_one(StepHeader)


async def test_next_and_previous_step_with_letters_and_arrows(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        assert header(app).number == 1
        await pilot.press("n")
        assert header(app).number == 2
        await pilot.press("right")
        assert header(app).number == 3
        await pilot.press("p", "left")
        assert header(app).number == 1


async def test_previous_on_the_first_step_says_so(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        assert header(app).number == 1
        assert "first step" in app.screen.query_one(NoticeLine).message


async def test_header_counts_minutes_left_not_a_clock(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        assert header(app).minutes_left == 8  # four stand-in steps of 2 minutes
        await pilot.press("n")
        assert header(app).minutes_left == 6


async def test_contents_jumps_to_the_chosen_step(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("t")
        assert isinstance(app.screen, ContentsScreen)
        # Highlight starts on step 1; section headings are skipped.
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, TutorialScreen)
        assert header(app).number == 3


async def test_contents_closes_without_escape(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("t")
        await pilot.press("q")
        assert isinstance(app.screen, TutorialScreen)
        assert header(app).number == 1


async def test_help_lists_keys_and_closes_with_q(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        assert isinstance(app.screen, TutorialScreen)
        assert app.is_running  # q closed the help, it did not quit


async def test_hints_come_one_at_a_time(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        hints = app.screen.query_one(HintBox)
        assert not hints.display or hints.shown == 0
        await pilot.press("h")
        assert hints.shown == 1
        await pilot.press("h")
        assert hints.shown == 2
        await pilot.press("h")
        assert "No more hints" in app.screen.query_one(NoticeLine).message


async def test_cheat_sheet_and_playground_keys_jump(make_app):
    from standin import make_steps

    app = make_app(make_steps(20))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("c")
        assert header(app).number == 19
        await pilot.press("g")
        assert header(app).number == 20


async def test_q_quits(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        assert not app.is_running


async def test_a_step_shows_its_views_in_the_order_its_lesson_lists_them(make_app):
    from dataclasses import replace

    from standin import make_steps

    lessons = make_steps()
    lessons[0] = replace(lessons[0], views=("metrics", "gauges", "seats"))
    app = make_app(lessons)
    async with app.run_test(size=(80, 24)) as pilot:
        def shown():
            return [view.view_name for view in app.screen.stack.shown()]

        assert shown() == ["metrics", "gauges", "seats"]
        await pilot.press("n", "n")
        assert shown() == ["seats", "metrics"]
        await pilot.press("p", "p")
        assert shown() == ["metrics", "gauges", "seats"]
