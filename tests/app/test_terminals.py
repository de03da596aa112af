"""--ascii draws nothing but ASCII; the footer shows only keys that work now."""

from __future__ import annotations

import pytest

from batchtui.glyphs import ascii_text
from batchtui.widgets.key_bar import KeyBar
from screen_text import screen_text
from standin import make_steps


def non_ascii(text: str) -> set[str]:
    return {ch for ch in text if not ch.isascii()}


@pytest.mark.parametrize("keys", [(), ("question_mark",), ("t",), ("n", "n", "n")])
async def test_ascii_mode_draws_only_ascii(make_app, keys):
    steps = make_steps()
    app = make_app(steps, ascii_only=True)
    async with app.run_test(size=(100, 40)) as pilot:
        for _ in range(30):
            app.screen.sim.single_iteration() if hasattr(app.screen, "sim") else None
        await pilot.press(*keys)
        await pilot.pause()
        text = screen_text(app)
        assert "Stand-in" in text or "Every key" in text  # real content, not a blank screen
        assert non_ascii(text) == set()


async def test_the_unicode_default_does_use_glyphs(make_app):
    # Guards the test above: the same screen without --ascii has block glyphs.
    app = make_app(make_steps())
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("n", "n", "n", "full_stop")
        assert non_ascii(screen_text(app))


def test_lesson_symbols_are_spelled_out_in_ascii():
    assert ascii_text("14 ms + 255 × 6.02 ms ≈ 1.55 s; 10¹² B/s ÷ 2") == "14 ms + 255 x 6.02 ms ~ 1.55 s; 10^12 B/s / 2"
    assert ascii_text("a ☃ b") == "a ? b"


def test_every_symbol_the_lessons_write_is_spelled_out_in_ascii():
    """Under --ascii the orientation said "? ? PgUp PgDn scroll it", a drill "within ?3%", step
    16 "replicas = ? peak / (0.8 x SLO rate) ?" and step 9 "? x W": the arrows, the plus-minus,
    the ceiling brackets and lambda had no ASCII spelling, and "?" reads as the help key. Every
    character of the lessons, the glossary, the orientation and the activities' and figures'
    texts has one now."""
    from pathlib import Path

    import batchtui.screens.orientation
    import steps

    root = Path(steps.__file__).parent
    files = [*root.glob("lessons/*.md"), root / "glossary.toml", *root.glob("activities/*.py"),
             *root.glob("figures/*.py"), Path(batchtui.screens.orientation.__file__)]
    unspelled = {(ch, path.name) for path in files for ch in set(path.read_text(encoding="utf-8"))
                 if not ch.isascii() and "?" in ascii_text(ch)}
    assert not unspelled, sorted(unspelled)
    assert ascii_text("↑ ↓ PgUp PgDn; within ±3%; ⌈9.26⌉ = 10; λ × W") == \
        "up down PgUp PgDn; within +/-3%; ceil(9.26) = 10; lambda x W"


async def test_footer_shows_typing_chords_while_an_input_has_focus(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        bar = app.screen.query_one(KeyBar)
        assert "step.next" in bar.key_ids
        await pilot.press("tab", "enter")  # a dial's entry box
        assert "chord.next" in bar.key_ids and "step.next" not in bar.key_ids
        await pilot.press("escape")
        assert "dial.adjust" in bar.key_ids


async def test_no_color_is_honoured(make_app, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=(80, 24)):
        assert app.no_color  # Textual drops colour; our views still differ by glyph


@pytest.mark.parametrize("step,keys", [(2, ("tab",)), (3, ("tab", "enter")), (20, ("w",))])
async def test_under_ascii_a_focused_box_is_marked_in_ascii(make_app, step, keys):
    """The drill's answer box, a dial's entry box and the playground's file prompt drew their
    focus bar as "▎" under --ascii: the rule meant to make it "|" sat in the box's scoped
    DEFAULT_CSS behind a screen's class, which scoping never matches."""
    from batchtui.widgets.answer_box import AnswerBox
    from tests import shared_steps

    app = make_app(shared_steps.lessons(), start_step=step, ascii_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*keys)
        await pilot.pause()
        assert isinstance(app.focused, AnswerBox)
        assert non_ascii(screen_text(app)) == set()


async def test_under_ascii_a_checklist_s_open_item_is_not_a_question_mark(make_app):
    from batchtui.widgets.goal_bar import GoalBar
    from tests import shared_steps

    assert ascii_text("budget ✓ seats ○") == "budget [x] seats [ ]"
    app = make_app(shared_steps.lessons(), start_step=6, ascii_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        goal = str(app.screen.query_one(GoalBar).render())
        assert "seats [ ]" in goal and "?" not in goal, goal


async def test_under_ascii_the_goal_line_s_note_is_set_off_in_ascii(make_app):
    """A goal with a note ("now 1.2 s", a break-it's live reading) joined its ask with " · ",
    which --ascii left in (issue 37); the unicode default keeps the middle dot."""
    from batchtui.widgets.goal_bar import GoalBar
    from tests import shared_steps

    for ascii_only, joint in ((True, " | "), (False, " · ")):
        app = make_app(shared_steps.lessons(), start_step=3, ascii_only=ascii_only)
        async with app.run_test(size=(80, 24)) as pilot:
            app.screen.sim.fast_forward(5.0)
            await pilot.pause()
            bar = app.screen.query_one(GoalBar)
            goal = str(bar.render())
            assert bar.note.startswith("now ") and f"{joint}now " in goal, goal
            assert non_ascii(goal) == set() if ascii_only else "·" in goal
