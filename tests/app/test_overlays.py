"""Screens over the tutorial close once and only while on top; the playground's file prompts;
the too-small message at tiny sizes."""

from __future__ import annotations

import pytest

from batchtui.screens.contents import ContentsScreen
from batchtui.screens.file_prompt import FilePromptScreen
from batchtui.screens.help import HelpScreen
from batchtui.screens.too_small import TooSmallScreen
from batchtui.screens.tutorial import TutorialScreen
from screen_text import screen_text
from tests import shared_steps


@pytest.fixture(scope="module")
def lessons():
    return shared_steps.lessons()


async def test_a_second_dismiss_does_not_pop_the_tutorial(make_app):
    app = make_app()
    results = []
    async with app.run_test(size=(80, 24)) as pilot:
        tutorial = app.screen
        contents = ContentsScreen(tutorial.summaries, 1, set())
        app.push_screen(contents, results.append)
        await pilot.pause()
        contents.dismiss(3)
        contents.dismiss(None)  # a queued close key, after the selection
        await pilot.pause()
        assert app.screen is tutorial and len(app.screen_stack) == 2
        assert results == [3]


async def test_a_screen_under_another_does_not_close(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("t")
        contents = app.screen
        app.push_screen(HelpScreen())
        await pilot.pause()
        contents.dismiss(None)  # a key it had queued: it is not on top, so nothing happens
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        assert app.screen is contents
        await pilot.press("q")
        assert isinstance(app.screen, TutorialScreen)


async def test_enter_twice_in_the_contents_opens_one_step(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("t", "down", "enter", "enter")
        await pilot.pause()
        assert isinstance(app.screen, TutorialScreen)
        await pilot.press("t", "enter", "t")
        await pilot.pause()
        assert isinstance(app.screen, ContentsScreen)  # the second t opened it again, over the tutorial
        assert isinstance(app.screen_stack[-2], TutorialScreen)


# -- the playground's file prompts (stand-in steps: the prompt itself, pushed directly)


async def prompt(app, pilot, saving: bool, suggestion, own_file=None) -> tuple[FilePromptScreen, list]:
    results = []
    screen = FilePromptScreen("File?", suggestion, saving=saving, own_file=own_file)
    app.push_screen(screen, results.append)
    await pilot.pause()
    return screen, results


def status(screen) -> str:
    return str(screen.query_one("#file-prompt-status").render())


async def test_saving_over_a_file_takes_a_second_enter(make_app, tmp_path):
    existing = tmp_path / "mine.toml"
    existing.write_text("precious")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen, results = await prompt(app, pilot, True, existing)
        await pilot.press("enter")
        assert "exists: Enter again replaces it" in status(screen) and results == []
        await pilot.press("enter")
        await pilot.pause()
        assert results == [existing] and isinstance(app.screen, TutorialScreen)


async def test_the_file_this_session_saved_is_saved_again_without_asking(make_app, tmp_path):
    ours = tmp_path / "ours.toml"
    ours.write_text("saved a minute ago")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen, results = await prompt(app, pilot, True, ours, own_file=ours)
        await pilot.press("enter")
        await pilot.pause()
        assert results == [ours]


@pytest.mark.parametrize("saving", [True, False])
async def test_a_folder_is_refused_and_the_prompt_stays(make_app, tmp_path, saving):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen, results = await prompt(app, pilot, saving, tmp_path)
        await pilot.press("enter")
        assert "is a folder" in status(screen) and app.screen is screen and results == []


async def test_opening_a_missing_file_says_so_and_a_typo_is_one_key_away(make_app, tmp_path):
    (tmp_path / "a.toml").write_text("")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen, results = await prompt(app, pilot, False, tmp_path / "a.tomll")
        await pilot.press("enter")
        assert "There is no" in status(screen)
        await pilot.press("backspace", "enter")
        await pilot.pause()
        assert results == [tmp_path / "a.toml"]


@pytest.mark.parametrize("keys", [("escape",), ("ctrl+u", "enter")], ids=["escape", "empty-enter"])
async def test_a_prompt_cancels_without_a_file(make_app, tmp_path, keys):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen, results = await prompt(app, pilot, True, tmp_path / "x.toml")
        await pilot.press(*keys)
        await pilot.pause()
        assert results == [None] and isinstance(app.screen, TutorialScreen)


@pytest.mark.parametrize("name, says", [("bad\0name.toml", "NUL"), ("~no-such-user-here/x.toml", "cannot be used"),
                                        ("x" * 5000 + ".toml", "cannot be used")], ids=["nul", "no-home", "too-long"])
async def test_a_name_that_cannot_be_a_file_is_refused(make_app, tmp_path, name, says):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen, results = await prompt(app, pilot, True, tmp_path / "x.toml")
        screen.query_one("#file-prompt-input").value = name
        await pilot.press("enter")
        assert says in status(screen) and results == []


async def test_the_playground_refuses_a_scenario_that_cannot_run(make_app, lessons, tmp_path):
    from batchtui.widgets.notice_line import NoticeLine

    bad = tmp_path / "neg.toml"
    # Passes the format's checks, refused by the engine: without chunked prefill a whole prompt
    # of max_model_len tokens must fit the token budget.
    bad.write_text("[engine]\nenable_chunked_prefill = false\nmax_num_batched_tokens = 2048\n"
                   "max_num_seqs = 64\n")
    app = make_app(list(lessons), start_step=20)
    async with app.run_test(size=(80, 24)) as pilot:
        tutorial = app.screen
        before = tutorial.sim.engine.scenario
        await pilot.press("o")
        app.screen.query_one("#file-prompt-input").value = str(bad)
        await pilot.press("enter")
        await pilot.pause()
        message = tutorial.query_one(NoticeLine).message
        assert "Kept the current scenario" in message and "cannot run" in message
        assert tutorial.sim.engine.scenario is before


# -- too small


FULL_MESSAGE = ("Terminal too small: {w}x{h}.", "batchtui needs at least 80x22:", "please enlarge it.", "(q quits)")


@pytest.mark.parametrize("size, lines", [
    ((79, 24), FULL_MESSAGE), ((80, 21), FULL_MESSAGE), ((40, 10), FULL_MESSAGE), ((30, 8), FULL_MESSAGE),
    ((20, 5), ("Too small: {w}x{h}.", "Needs 80x22:", "please enlarge.", "(q quits)")),
    ((16, 3), ("Too small: {w}x{h}.", "Needs 80x22.", "(q quits)")),
    ((12, 2), ("Needs 80x22.",)),
], ids=lambda v: "%dx%d" % v if isinstance(v[0], int) else "")
async def test_the_too_small_message_is_whole_at_any_size(make_app, size, lines):
    """Every line whole, nothing else on the screen (no scrollbar, no leftover of the step)."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        width, height = size
        shown = [line.strip() for line in screen_text(app).split("\n") if line.strip()]
        assert shown == [line.format(w=width, h=height) for line in lines], shown


async def test_the_glossary_lists_every_term_opens_at_the_step_s_own_and_closes(make_app, lessons):
    """d opens the glossary over the tutorial at 80x23 (a tmux pane on an 80x24 terminal): every
    term with its meaning and the step that teaches it, the step on show's terms in sight; d, q,
    Escape and Enter close it; ctrl+g opens it from the answer box, where d is typed."""
    from batchtui.screens.glossary import GlossaryScreen
    from batchtui.widgets.answer_box import AnswerBox
    from steps import glossary

    app = make_app(list(lessons), start_step=10)
    async with app.run_test(size=(80, 23)) as pilot:
        tutorial = app.screen
        await pilot.press("d")
        assert isinstance(app.screen, GlossaryScreen)
        await pilot.pause()
        text = screen_text(app)
        assert "Glossary" in text and "gap (ITL)" in text and "step 10" in text  # step 10's term, in sight
        assert len(app.screen.query(".glossary-term")) == len(glossary.terms())
        seen = set()
        for key in ("home", *["pagedown"] * 4):  # the whole list, a page at a time
            await pilot.press(key)
            seen.update(term.name for term in glossary.terms() if f" {term.name} " in screen_text(app))
        assert seen == {term.name for term in glossary.terms()}
        for close in ("d", "q", "escape", "enter"):
            await pilot.press(close)
            assert app.screen is tutorial, close
            await pilot.press("d")
            assert isinstance(app.screen, GlossaryScreen)
        await pilot.press("escape")
    app = make_app(list(lessons), start_step=2)
    async with app.run_test(size=(80, 23)) as pilot:
        await pilot.pause()
        await pilot.press("tab")  # the answer box
        assert isinstance(app.screen.focused, AnswerBox)
        await pilot.press("d")
        assert app.screen.focused.value == "d"  # typed, not a key
        await pilot.press("ctrl+g")
        assert isinstance(app.screen, GlossaryScreen)
        await pilot.pause()
        assert "ceiling" in screen_text(app)  # step 2's term
