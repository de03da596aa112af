"""Advance an engine against a clock and publish snapshots to whoever listens.

The engine is synchronous and knows nothing of real time; this asyncio layer paces it. With
`time_scale` 1 one simulated second takes one real second; 0.01 is slow motion (one 6 ms decode
iteration takes 0.6 s), 10 is ten times faster than real time. Snapshots go out at most `fps`
times a second, so drawing costs the same however fast the simulation runs. No UI import here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from .engine import Engine
from .reports import EngineSnapshot

TIME_SCALES = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
MAX_ITERATIONS_PER_TICK = 20000  # keeps one frame's work bounded when running far ahead


class Driver:
    """Runs an Engine in real time (scaled). Listeners get an EngineSnapshot per frame."""

    def __init__(self, engine: Engine, time_scale: float = 1.0, fps: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.time_scale = time_scale
        self.fps = fps
        self.clock = clock
        self.paused = True
        self._subscribers: list[Callable[[EngineSnapshot], None]] = []
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._stopped = False
        self.sim_clock = engine.time  # where real time (scaled) has got to in simulated time

    # -- listeners
    def subscribe(self, callback: Callable[[EngineSnapshot], None]) -> Callable[[], None]:
        """Call `callback(snapshot)` after every frame; returns a function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def publish(self) -> EngineSnapshot:
        snap = self.engine.snapshot()
        for cb in list(self._subscribers):
            cb(snap)
        return snap

    # -- controls
    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        self._wake.set()

    def toggle(self) -> bool:
        if self.paused:
            self.resume()
        else:
            self.pause()
        return not self.paused

    def single_step(self) -> EngineSnapshot:
        """Pause and run exactly one iteration."""
        self.paused = True
        self.engine.step()
        self.sim_clock = self.engine.time
        return self.publish()

    def faster(self) -> float:
        self.time_scale = _next_scale(self.time_scale, +1)
        return self.time_scale

    def slower(self) -> float:
        self.time_scale = _next_scale(self.time_scale, -1)
        return self.time_scale

    def restart_clock(self) -> None:
        """Put the clock back on the engine's time (after a dial restarted the run)."""
        self.sim_clock = self.engine.time

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    # -- the loop
    def advance(self, real_seconds: float) -> int:
        """Run the iterations that fit in `real_seconds` of wall time at the current scale."""
        engine = self.engine
        # The clock may lag the engine (an iteration overshoots it, or the engine jumped over an
        # idle gap to the next arrival); then the engine waits for the clock to catch up, but
        # never for more than about ten frames: a long idle stretch is not worth watching.
        self.sim_clock = max(self.sim_clock, engine.time - 10.0 * max(real_seconds, 0.1) * self.time_scale)
        self.sim_clock += real_seconds * self.time_scale
        target = self.sim_clock
        n = engine.advance_until(target, MAX_ITERATIONS_PER_TICK)
        if engine.done:
            self.paused = True
        if n >= MAX_ITERATIONS_PER_TICK:
            self.sim_clock = engine.time  # too fast to keep up: drop the debt rather than pile it up
        return n

    async def run(self) -> None:
        """Pace the engine until stopped. Sleeps while paused (no CPU used)."""
        frame = 1.0 / self.fps
        last = self.clock()
        while not self._stopped:
            if self.paused:
                self._wake.clear()
                await self._wake.wait()
                last = self.clock()
                continue
            now = self.clock()
            self.advance(now - last)
            last = now
            self.publish()
            await asyncio.sleep(max(0.0, frame - (self.clock() - now)))

    def start(self) -> asyncio.Task:
        self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task


def _next_scale(current: float, direction: int) -> float:
    if direction > 0:
        for s in TIME_SCALES:
            if s > current * 1.0001:
                return s
        return TIME_SCALES[-1]
    for s in reversed(TIME_SCALES):
        if s < current * 0.9999:
            return s
    return TIME_SCALES[0]
