"""When things happen in the app: the live simulation's pace and the slow work done beside it.

`RealClock` is the app's: the driver paces the engine with the wall clock in a worker, and work
that takes tenths of a second (a rate sweep, a drill question measured from short runs) runs in a
thread once the screen has been drawn, so a step change never waits for it. Tests inject a clock
of their own through `AppSettings.clock` (tests/app/manual_clock.py) under which nothing moves
until the test says so, so every frame they capture is the same.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol


class Clock(Protocol):
    def start(self, widget, sim, running: bool) -> None:
        """Pace `sim` (a `LiveSimulation`); `running`: start it now rather than paused."""

    async def later(self, widget, callback: Callable[[], Any], delay: float = 0.0) -> None:
        """Call `callback` once `widget`'s screen is on the terminal (and `delay` s after)."""

    async def in_background(self, widget, work: Callable[[], Any], done: Callable[[Any], Any],
                            delay: float = 0.0, group: str = "background") -> None:
        """`done(work())`, where `work` may take tenths of a second: keep the app live meanwhile."""


class RealClock:
    """The wall clock: a driver worker per simulation, slow work in threads after a frame."""

    def start(self, widget, sim, running: bool) -> None:
        widget.run_worker(sim.run, name="driver", group="driver", exclusive=True)
        if running:
            sim.resume()

    async def later(self, widget, callback: Callable[[], Any], delay: float = 0.0) -> None:
        if delay:
            widget.call_after_refresh(widget.set_timer, delay, callback)
        else:
            widget.call_after_refresh(callback)

    async def in_background(self, widget, work: Callable[[], Any], done: Callable[[Any], Any],
                            delay: float = 0.0, group: str = "background") -> None:
        def run_in_thread() -> None:
            result = work()
            widget.app.call_from_thread(done, result)

        def start() -> None:
            if widget.is_attached:
                widget.run_worker(run_in_thread, thread=True, group=group, exclusive=True)

        await self.later(widget, start, delay)


async def call(callback: Callable[..., Any], *args: Any) -> Any:
    """Call a function that may be a coroutine function, and await what it returns if need be."""
    result = callback(*args)
    if inspect.isawaitable(result):
        result = await result
    return result
