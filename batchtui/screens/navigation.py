"""Changing step on the tutorial screen: n and p, a table-of-contents choice, c and g.

Step keys arriving together (twenty n's in one read, a paste, a key held down) coalesce: each
moves the step wanted, and the step is drawn once they have all been read, so only the step
they end on is ever mounted. The draw runs in the app's own message loop, as key actions do:
no other key's action runs while a step's widgets are replaced (a key that is not a step key
draws the step wanted first, then acts on it: `settle_now`).

How "once they have all been read" is known: a terminal's read reaches the app as a row of key
messages in its queue. The first step key asks for a settling pass behind them
(`App.call_later`); a pass that finds the step wanted moved since it was asked for asks for
another, behind the keys that moved it, so the draw comes after the last step key of the row.
"""

from __future__ import annotations

NAVIGATION_ACTIONS = frozenset({"next_step", "previous_step", "go_to_step"})
"""The screen's actions that change step (and coalesce)."""


def changes_step(action) -> bool:
    """`action` (a binding's action string, or Textual's parsed form) is a step key's."""
    if isinstance(action, str):
        from textual.actions import parse

        action = parse(action)
    return action[1] in NAVIGATION_ACTIONS


class Navigation:
    """The step wanted by the learner's step keys, and the one draw that brings it."""

    def __init__(self, screen) -> None:
        self.screen = screen
        self.wanted: int | None = None
        """The step (0-based) the keys asked for last, while the change is on its way."""
        self.moves = 0
        """Counts the step keys: a settling pass that sees it move waits for another pass."""
        self.pending = False
        """A settling pass is queued (behind the keys read with the first step key)."""

    @property
    def at(self) -> int:
        """The step the next step key moves from: the one wanted, else the one on show."""
        return self.wanted if self.wanted is not None else self.screen.index

    def go(self, index: int) -> None:
        """Open step `index` once the keys read with this one have been acted on."""
        self.wanted = index
        self.moves += 1
        if not self.pending:
            self.pending = True
            self.screen.app.call_later(self.settle, self.moves)

    async def settle(self, seen: int) -> None:
        """A settling pass: draw the step wanted unless a step key moved it since `seen`."""
        if not self.pending:
            return  # drawn already (`settle_now`)
        if self.moves != seen and self.screen.is_attached:
            self.screen.app.call_later(self.settle, self.moves)
            return
        await self.settle_now()

    async def settle_now(self) -> None:
        """Draw the step wanted, if one is (before another key's action, or at the end of a
        row of step keys)."""
        if not self.pending:
            return
        index, self.wanted, self.pending = self.wanted, None, False
        screen = self.screen
        if index is not None and index != screen.index and screen.is_attached:
            await screen.show_step(index)

    def step_number(self, number: int) -> None:
        """Open the step numbered `number` (c, g, a contents choice)."""
        for i, summary in enumerate(self.screen.summaries):
            if summary.number == number:
                self.go(i)
                return
