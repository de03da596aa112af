"""Keys posted to the app in a row, as a terminal read delivers them (`batchtui/key_order.py`):
each takes effect in order, as if typed one at a time. (On a real terminal:
`test_keys_land.py`.)"""

from __future__ import annotations

import steps
from textual import events

from batchtui.screens.help import HelpScreen
from batchtui.widgets.answer_box import AnswerBox

CHARACTERS = {"question_mark": "?", "escape": "\x1b", "backspace": "\x7f", "ctrl+u": "\x15"}


def one_read(app, *keys: str) -> None:
    for key in keys:
        app.post_message(events.Key(key, CHARACTERS.get(key, key if len(key) == 1 else None)))


async def settled(pilot, done, tries: int = 400) -> bool:
    for _ in range(tries):  # waits on the app's state, not on time
        await pilot.pause()
        if done() and not getattr(getattr(pilot.app, "key_order", None), "busy", False):
            return True
    return False


async def test_keys_in_a_row_land_where_typed(make_app):
    app = make_app(list(steps.open_lessons()), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("tab")
        box = app.screen.query_one(AnswerBox)
        assert app.focused is box
        one_read(app, "1", "2", "backspace", "3")
        assert await settled(pilot, lambda: box.value == "13"), box.value
        one_read(app, "9", "9", "ctrl+u", "1", "6", "6")
        assert await settled(pilot, lambda: box.value == "166"), box.value
        one_read(app, "c", "escape", "c")
        assert await settled(pilot, lambda: app.tutorial.step.number == 19), (box.value, app.tutorial.step.number)
        one_read(app, "question_mark", "escape", "question_mark")
        assert await settled(pilot, lambda: isinstance(app.screen, HelpScreen))
        one_read(app, "escape", "t", "enter", "t")
        assert await settled(pilot, lambda: type(app.screen).__name__ == "ContentsScreen"), type(app.screen)


async def test_keys_go_on_after_a_key_whose_widget_never_answers(monkeypatch):
    """A round that waits on a queue longer than `STUCK_S` goes on without it: a widget stuck on
    a key does not keep the keys after it from the app."""
    import asyncio

    from textual.app import App
    from textual.binding import Binding
    from textual.widgets import Input

    import batchtui.key_order as key_order

    monkeypatch.setattr(key_order, "STUCK_S", 0.3)

    released = asyncio.Event()

    class Stuck(Input):
        async def on_key(self, event) -> None:
            await released.wait()  # stuck until the test has its answer (then the app can close)

    class Bare(App):
        BINDINGS = [Binding("ctrl+b", "mark", priority=True)]

        def __init__(self) -> None:
            super().__init__()
            self.key_order = key_order.KeyOrder(self, self._act_on_key)
            self.marked = 0

        def compose(self):
            yield Stuck()

        async def on_event(self, event) -> None:
            if isinstance(event, events.Key) and not event.is_forwarded:
                await self.key_order.arrived(event)
            else:
                await super().on_event(event)

        async def _act_on_key(self, event) -> None:
            await super().on_event(event)

        def action_mark(self) -> None:
            self.marked += 1

    app = Bare()
    async with app.run_test() as pilot:
        await pilot.pause()
        one_read(app, "a", "ctrl+b")
        for _ in range(100):
            await asyncio.sleep(0.05)
            if app.marked:
                break
        marked = app.marked
        released.set()
        assert marked == 1


async def test_an_answer_typed_before_the_drills_question_is_drawn_is_kept(make_app):
    """A drill's first question is drawn beside the app (its numbers may need simulated runs):
    what the learner typed meanwhile stays in the box (it was cleared when the question came)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from manual_clock import ManualClock

    class HeldClock(ManualClock):
        """Work beside the app waits until the test lets it finish."""

        def __init__(self) -> None:
            self.held = []

        async def in_background(self, widget, work, done, delay: float = 0.0, group: str = "background") -> None:
            self.held.append((work, done))

    clock = HeldClock()
    app = make_app(list(steps.open_lessons()), start_step=2, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("tab", "1", "2")
        box = app.screen.query_one(AnswerBox)
        assert box.value == "12" and clock.held
        for work, done in clock.held:
            await done(work())
        await pilot.pause()
        from batchtui.widgets.activities.drill import DrillView

        assert app.screen.query_one(DrillView).question is not None  # the question is in...
        assert box.value == "12"  # ...and what was typed still is


async def test_dial_moves_and_a_reset_in_one_read_land_in_order(make_app):
    """A dial's move reaches the screen as the dial list's `Moved` (after the run took it): a
    reset read with the moves acts after them, so the dials and the run end at the step's start
    and the notice is the reset's (a `Moved` after it would have cleared it)."""
    from batchtui.widgets.dial import DialControl
    from batchtui.widgets.notice_line import NoticeLine

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab")  # the first dial: request rate 20 req/s, step 1
        dial = app.focused
        assert isinstance(dial, DialControl) and dial.value == 20
        one_read(app, "right", "right", "right")
        assert await settled(pilot, lambda: app.screen.sim.scenario.workload.request_rate == 23.0)
        assert dial.value == 23
        one_read(app, "right", "right", "r")
        notice = app.screen.query_one(NoticeLine)
        assert await settled(pilot, lambda: notice.message == "Scenario reset to the step's start."), notice.message
        for _ in range(20):  # nothing of the moves is still on its way
            await pilot.pause(0.02)
        assert notice.message == "Scenario reset to the step's start."
        assert app.screen.sim.scenario.workload.request_rate == 20.0 and dial.value == 20
        one_read(app, "left", "left")  # and moves after a reset clear its notice, as typed slowly
        assert await settled(pilot, lambda: dial.value == 18 and notice.message == ""), (dial.value, notice.message)
        assert app.screen.sim.scenario.workload.request_rate == 18.0


async def test_tab_read_with_step_keys_reaches_the_new_step_s_dials(make_app):
    """n n n tab in one read (or t, Down, Enter, tab): the tab moved the focus to the new step's
    first dial, then the step's own "the lesson takes the keys", queued behind it, took it back:
    the tab was lost. A step key then tab, and shift+tab after, land where typed slowly."""
    from batchtui.widgets.dial import DialControl

    app = make_app(list(steps.open_lessons()), start_step=5)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        one_read(app, "n", "n", "n", "tab")
        assert await settled(pilot, lambda: app.tutorial.step.number == 8)
        assert isinstance(app.focused, DialControl), app.focused
        one_read(app, "escape", "t", "down", "enter", "tab")
        assert await settled(pilot, lambda: app.tutorial.step.number == 9)
        assert isinstance(app.focused, AnswerBox), app.focused
        one_read(app, "ctrl+n", "tab", "shift+tab")
        assert await settled(pilot, lambda: app.tutorial.step.number == 10)
        assert app.focused is app.tutorial.lesson, app.focused


def resized(app, width: int, height: int) -> None:
    """The terminal's size changing, as the driver posts it (behind the keys it read before)."""
    from textual.geometry import Size

    size = Size(width, height)
    app._driver._size = size  # (the headless driver's size, as `Pilot.resize_terminal` sets it)
    app.post_message(events.Resize(size, size))


async def test_keys_read_before_the_terminal_shrinks_land_where_they_were_typed(make_app):
    """tmux: Tab 42, then the window shrunk below 80x22 and grew back, in a few milliseconds:
    the keys, still waiting their turn, went to the "too small" screen the resize pushed ahead of
    them, and were lost (the box empty, no draft); keys read while it was small stay unread."""
    from batchtui.screens.too_small import TooSmallScreen

    app = make_app(list(steps.open_lessons()), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        one_read(app, "tab", "4", "2")
        resized(app, 60, 15)
        one_read(app, "7")
        assert await settled(pilot, lambda: isinstance(app.screen, TooSmallScreen))
        resized(app, 80, 24)
        one_read(app, "5")
        assert await settled(pilot, lambda: not isinstance(app.screen, TooSmallScreen))
        box = app.screen.query_one(AnswerBox)
        assert app.focused is box and box.value == "425", box.value


async def test_step_keys_that_leave_the_step_and_come_back_in_one_read_open_it_again(make_app):
    """tmux, step 2: Tab 4 ctrl+n ctrl+p 7 in one write typed "47" in the box (the step keys
    coalesced to no change, the box kept the keys); typed slowly, the step opens again, the
    keys on the lesson, and 7 is no answer (the draft "4"). Now both end alike."""
    app = make_app(list(steps.open_lessons()), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        box = app.screen.query_one(AnswerBox)
        one_read(app, "tab", "4", "ctrl+n", "ctrl+p", "7")
        assert await settled(pilot, lambda: app.screen.query_one(AnswerBox) is not box)
        assert app.tutorial.step.number == 2 and app.screen.query_one(AnswerBox).value == "4"
        assert not isinstance(app.focused, AnswerBox) and app.progress.drafts == {(2, 1): "4"}


async def test_keys_typed_after_ctrl_n_in_one_read_are_for_the_next_step(make_app):
    """tmux, step 2: Tab 4 ctrl+n 7 in one write typed the 7 into step 2's box (its draft
    "47"): the step change waited for the keys read with it, and the box still had them."""
    app = make_app(list(steps.open_lessons()), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        one_read(app, "tab", "4", "ctrl+n", "7")
        assert await settled(pilot, lambda: app.tutorial.step.number == 3)
        assert app.progress.drafts == {(2, 1): "4"}


async def test_n_and_p_in_one_read_open_the_step_afresh_as_typed_slowly(make_app):
    """n then p, typed slowly, open the step again: its first question, a guess asked again.
    In one read they coalesced to no change at all (ctrl+r Esc n p ctrl+r ctrl+r in one write
    ended on step 2's fifth question, typed slowly on its third)."""
    from batchtui.widgets.activities.drill import DrillView

    app = make_app(list(steps.open_lessons()), start_step=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        view = app.screen.query_one(DrillView)
        one_read(app, "ctrl+r", "escape", "n", "p")
        assert await settled(pilot, lambda: app.screen.query_one(DrillView) is not view)
        assert app.tutorial.step.number == 2 and app.screen.query_one(DrillView).asked == 1
