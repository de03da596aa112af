"""The clock tests inject (`AppSettings(clock=ManualClock())`): nothing moves until the test moves
it. A simulation started "running" is only flagged so (its driver loop never runs), and slow work
is done at once, so a screenshot taken next already has its result."""

from __future__ import annotations

from batchtui.clock import call


class ManualClock:
    def start(self, widget, sim, running: bool) -> None:
        if running:
            sim.resume()

    async def later(self, widget, callback, delay: float = 0.0) -> None:
        await call(callback)

    async def in_background(self, widget, work, done, delay: float = 0.0, group: str = "background") -> None:
        await call(done, work())
