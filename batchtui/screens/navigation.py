"""Changing step on the tutorial screen: n and p, a table-of-contents choice, c and g.

Step keys arriving together (twenty n's in one read, a paste, a key held down) coalesce: each
moves the step wanted, and the step is drawn once no key read with them is left to act on
(`BatchApp.key_order`, which hands the app one key at a time, `after_keys`), so only the step
they end on is ever mounted. The draw runs in the app's own message loop, as key actions do:
no other key's action runs while a step's widgets are replaced (a key that is not a step key
draws the step wanted first, then acts on it: `settle_now`; so does a key for a text box,
`BatchApp._act_on_key`). A row that ends on the step it left (n then p) draws it afresh, as the
same keys typed slowly do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..keys import shown

NAVIGATION_ACTIONS = frozenset({"next_step", "previous_step", "go_to_step"})
"""The screen's actions that change step (and coalesce)."""


def changes_step(action) -> bool:
    """`action` (a binding's action string, or Textual's parsed form) is a step key's."""
    if isinstance(action, str):
        from textual.actions import parse

        action = parse(action)
    return action[1] in NAVIGATION_ACTIONS


class Navigation:
    """The step wanted by the learner's step keys, and the one draw that brings it.
    `open_step(index)` draws a step (the screen's); `say(words)` puts a line before the learner."""

    def __init__(self, app, summaries, open_step: Callable[[int], Awaitable[None]],
                 say: Callable[[str], None], index: int = 0) -> None:
        self.app = app
        self.summaries = summaries
        """Number, title, section and minutes of every step (`step_list.summaries_of`)."""
        self.open_step = open_step
        self.say = say
        self.index = index
        """The step on show (0-based), given by the screen as it opens one."""
        self.wanted: int | None = None
        """The step (0-based) the keys asked for last, while the change is on its way."""
        self.pending = False
        """A draw of the step wanted is to come (once the keys read with it are acted on)."""
        self.left = False
        """A step key of the row wanted another step than the one on show: the step the row
        ends on is drawn afresh even if it is that one, as n then p typed slowly opens it again
        (the keys after them on the lesson, not in the box they left)."""

    @property
    def at(self) -> int:
        """The step the next step key moves from: the one wanted, else the one on show."""
        return self.wanted if self.wanted is not None else self.index

    def go(self, index: int) -> None:
        """Open step `index` once the keys read with this one have been acted on."""
        self.wanted = index
        self.left = self.left or index != self.index
        if not self.pending:
            self.pending = True
            self.app.key_order.after_keys(self.settle_now)

    async def settle_now(self) -> None:
        """Draw the step wanted, if one is (before another key's action, or at the end of a
        row of step keys)."""
        if not self.pending:
            return
        index, left = self.wanted, self.left
        self.wanted, self.pending, self.left = None, False, False
        if index is not None and (index != self.index or left):
            await self.open_step(index)

    def step_by(self, steps: int) -> None:
        """n (1) and p (-1): from the step wanted, or the one on show; at either end, says so."""
        to = self.at + steps
        if to >= len(self.summaries):
            still_open = self.app.progress.still_open([s.number for s in self.summaries])
            self.say(f"This is the last step. {still_open or 'Every step is done.'} "
                     f"{shown('step.contents')} opens the table of contents.")
        elif to < 0:
            self.say("This is the first step.")
        else:
            self.go(to)

    def at_the_end(self) -> str:
        """On the last step: which steps a learner who skipped or missed some can still go back
        to ("" elsewhere, or when none is left)."""
        if self.index != len(self.summaries) - 1:
            return ""
        number = self.summaries[self.index].number
        others = self.app.progress.still_open([s.number for s in self.summaries if s.number != number])
        return f"The last step. {others} {shown('step.contents')} opens the table of contents." if others else ""

    def contents(self) -> None:
        """t: the table of contents; the step chosen there is opened."""
        from .contents import ContentsScreen

        def chosen(number: int | None) -> None:
            if number is not None:
                self.step_number(number)

        completed = self.app.progress.completed
        self.app.push_screen(ContentsScreen(self.summaries, self.summaries[self.index].number, completed), chosen)

    def step_number(self, number: int) -> None:
        """Open the step numbered `number` (c, g, a contents choice)."""
        for i, summary in enumerate(self.summaries):
            if summary.number == number:
                self.go(i)
                return
