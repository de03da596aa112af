"""Keys acted on one at a time, in the order they were typed, however many come in one read.

How Textual moves a key: the app hands it to the focused widget's message queue, and from there
it climbs, one message queue at a time, through the widget's parents to the screen and back to
the app, where the bindings are looked up. A key the focused widget takes for itself (a
character in a text box) is done at the first queue; a bound key (Backspace and Ctrl-U in a box,
Esc, ?, t) only at the app's, several queues later. The app hands out every key of a read before
the first has climbed that far, each to whatever has focus at that moment. So with several keys
in one read (SSH delivers a fast typist's keys so, and tmux, and a paste): `12<Backspace>3` in
an answer box typed 1 2 3 and then deleted the 3; `?<Esc>?` sent the Esc and the second ? to the
lesson before the help screen the first ? opened could take them; `c<Esc>c` typed the second c
into the box the Esc was leaving.

`KeyOrder` hands the app one key at a time. The next key goes out once the one before has been
acted on, and what it set moving has arrived: the key's own climb, a message its action posted
(the answer box's Leave, a list's choice), a screen it opened or closed, a focus it moved (Textual
moves focus through the app's queue). How that is known without a clock: a call queued behind
the key in a message queue runs only once the queue has handled the key and everything before
it. A *round* queues such a call in the focused widget's queue; when it runs, in its parent's,
and so on up to the screen and then the app's own queue. The first round follows the key's
climb; further rounds follow the focus as it is then, until a round finds the screen and the
focus as it left them.

A queue that closes with the call still in it (its widget removed) would stop a round: a round
that has not moved on checks, every `CHECK_S`, whether the widget it waits on is still there,
and gives up on a wait longer than `STUCK_S` (keys then flow again, in the order read).

Step keys need one more thing: n twenty times in one read draws only the step they end on
(`screens/navigation.py`). `after_keys(callback)` runs `callback` once no key is waiting or
being acted on; `in_turn(callback)` runs it once the keys read so far have been, before those
read after it (the terminal's size changing: keys typed before it shrank are for the tutorial,
not for the "too small" screen it brings).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from time import monotonic

from textual import events
from textual.message_pump import MessagePump

ROUNDS = 6
"""At most this many rounds after a key (each key takes two or three: its climb, then one or two
that find nothing moved)."""
CHECK_S = 0.1
"""Seconds between checks that the queue a round waits on still runs."""
STUCK_S = 5.0
"""A round waiting this long on one queue goes on without it. Well over the slowest thing a key
does on a loaded machine (a step change, about 0.7 s), so keys never overtake one another in
use; it only keeps the keyboard alive if something never answers."""


class KeyOrder:
    """The keys read but not yet acted on, handed to the app one at a time."""

    def __init__(self, app, deliver: Callable[[events.Event], Awaitable[None]]) -> None:
        self.app = app
        self._deliver = deliver
        """Textual's own handling of one key (priority bindings, then the focused widget)."""
        self.waiting: deque[events.Event | Callable[[], object]] = deque()
        """Keys (and pastes) read and not yet handed out, oldest first, and what waits its turn
        among them (`in_turn`)."""
        self._round: _Round | None = None
        """The round under way for the key handed out last (None: no key is being acted on)."""
        self._handing = False
        """A key is being handed to Textual (its priority binding may run a while)."""
        self._after: list[Callable[[], object]] = []
        self._timer = None

    @property
    def busy(self) -> bool:
        """A key is being acted on, or waits to be."""
        return self._handing or self._round is not None or bool(self.waiting)

    async def arrived(self, event: events.Event) -> None:
        """A key or paste read from the terminal: acted on now if nothing is ahead of it, else
        once everything read before it has been."""
        self.waiting.append(event)
        if self._round is None and not self._handing:
            await self._next()

    def in_turn(self, callback: Callable[[], None]) -> None:
        """Run `callback` once every key read so far has been acted on, before any read after:
        now, if none is waiting or being acted on."""
        if self.busy:
            self.waiting.append(callback)
        else:
            callback()

    def after_keys(self, callback: Callable[[], object]) -> None:
        """Run `callback` (in the app's message loop) once no key is waiting or being acted on:
        at once, if none is."""
        if self.busy:
            self._after.append(callback)
        else:
            self.app.call_later(callback)

    async def _next(self) -> None:
        """Hand out the oldest waiting key; when none is left, run what waited for that."""
        while self._round is None:
            if not self.waiting:
                callbacks, self._after = self._after, []
                for callback in callbacks:
                    await _call(callback)
                if not self.waiting:  # (a callback may not read keys, but be safe)
                    self._stop_checking()
                    return
                continue
            event = self.waiting.popleft()
            if not isinstance(event, events.Event):  # (`in_turn`'s)
                await _call(event)
                continue
            self._handing = True
            try:
                await self._deliver(event)
            finally:
                self._handing = False
            self._start_round(1)

    # -- rounds
    def _start_round(self, number: int) -> None:
        app = self.app
        chain: list[MessagePump] = []
        node = app.focused or app.screen
        while node is not None and node is not app:
            chain.append(node)
            node = node.parent
        self._round = _Round(number, chain, (app.screen, app.focused))
        self._check_soon()
        self._hop(self._round)

    def _hop(self, round_: _Round) -> None:
        """Queue the round's call in its next queue (passing over queues that take no more), and
        after the last (the screen's), in the app's own."""
        while round_.at < len(round_.chain):
            node = round_.chain[round_.at]
            round_.since = monotonic()
            if node.call_later(self._arrived_at, round_, round_.at):
                return
            round_.at += 1
        self.app.call_later(self._round_done, round_)

    def _arrived_at(self, round_: _Round, at: int) -> None:
        """The round's call ran in queue `at`: on to the next."""
        if round_ is self._round and round_.at == at:  # (else given up on, or passed over)
            round_.at += 1
            self._hop(round_)

    async def _round_done(self, round_: _Round) -> None:
        if round_ is not self._round or round_.finished:
            return
        round_.finished = True
        app = self.app
        moved = (app.screen, app.focused) != round_.found
        if (round_.number == 1 or moved) and round_.number < ROUNDS:
            self._start_round(round_.number + 1)
            return
        self._round = None
        await self._next()

    # -- a queue that stopped
    def _check_soon(self) -> None:
        if self._timer is None:
            self._timer = self.app.set_interval(CHECK_S, self._check, name="key-order")

    def _stop_checking(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _check(self) -> None:
        round_ = self._round
        if round_ is None or round_.at >= len(round_.chain):
            return
        node = round_.chain[round_.at]
        if not (node.is_running and node.is_attached) or monotonic() - round_.since > STUCK_S:
            round_.at += 1
            self._hop(round_)


class _Round:
    """One round of calls up a chain of message queues (the focused widget's ... the screen's,
    then the app's)."""

    __slots__ = ("number", "chain", "found", "at", "since", "finished")

    def __init__(self, number: int, chain: list[MessagePump], found: tuple) -> None:
        self.number = number
        self.chain = chain
        self.found = found
        """The screen and focus when the round began."""
        self.at = 0
        """The queue whose call the round waits on."""
        self.since = monotonic()
        self.finished = False


async def _call(callback: Callable[[], object]) -> None:
    result = callback()
    if isinstance(result, Awaitable):
        await result
