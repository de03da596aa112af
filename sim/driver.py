"""Advance an engine against a clock and publish snapshots to whoever listens.

The engine is synchronous and knows nothing of real time; this asyncio layer paces it. With
`time_scale` 1 one simulated second takes one real second; 0.01 is slow motion (one 6 ms decode
iteration takes 0.6 s), 10 is ten times faster than real time. Snapshots go out at most `fps`
times a second, so drawing costs the same however fast the simulation runs. No UI import here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

from .engine import Engine
from .reports import EngineSnapshot

TIME_SCALES = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
WORK_SHARE = 0.4
"""The share of a frame's wall time the engines may take: the rest is the app's (drawing, keys),
so a key is answered within about a frame however heavy the simulation or busy the machine."""
MAX_SLICE = 4096
"""Most iterations per engine call between two looks at the clock. A slice is sized from the
time iterations have been taking, to end well before the deadline (one iteration at least; a
decode stretch in bulk counts its iterations, so no single call runs long)."""
CHUNK = 0.008
"""Wall seconds of engine work between two turns of the app within a frame's share: a key
arriving mid-frame waits for about this long, not for the whole share."""
KEY_GRACE = 0.03
"""Seconds a frame's work waits when a key came while the frame before slept, so the turns of
the loop the app takes to answer it are not each held up by a chunk."""
BEHIND = 0.9
"""Below this share of the asked speed (over the last second) the run says it falls behind."""


class Driver:
    """Runs an Engine in real time (scaled). Listeners get an EngineSnapshot per frame."""

    def __init__(self, engine: Engine, time_scale: float = 1.0, fps: float = 10.0,
                 clock: Callable[[], float] = time.monotonic,
                 keys: Callable[[], object] | None = None) -> None:
        """`keys`: a reading that changes whenever a key arrives (a count, say): a frame whose
        reading changes between two chunks of its work stops there, so the app answers the key
        in the frame's rest instead of sharing the loop with the engines chunk by chunk."""
        self.engine = engine
        self.keys = keys
        self._keys_seen = keys() if keys is not None else None
        """The `keys` reading last looked at (a new one at a frame's start waits `KEY_GRACE`)."""
        self.time_scale = time_scale
        self.fps = fps
        self.clock = clock
        self.paused = True
        self._subscribers: list[Callable[[EngineSnapshot], None]] = []
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._stopped = False
        self.sim_clock = engine.time  # where real time (scaled) has got to in simulated time
        self.followers: list[Engine] = []
        """Engines kept on this one's clock (a comparison run on the same arrivals), advanced
        within the same frame's time."""
        self.speed: float | None = None
        """Simulated seconds per real second reached over about the last second while running
        (None: not measured yet, or paused); below the asked `time_scale` when the work per frame
        was cut short."""
        self._window: list[tuple[float, float, float]] = []
        """(real time, simulated seconds run, real seconds asked) per recent frame."""
        self._per_iteration: dict[int, float] = {}
        """Wall seconds an iteration has been taking, per engine (by id), to size slices."""

    # -- listeners
    def subscribe(self, callback: Callable[[EngineSnapshot], None]) -> Callable[[], None]:
        """Call `callback(snapshot)` after every frame; returns a function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def publish(self) -> EngineSnapshot:
        """Send the current state (the followers brought to its clock first, however long)."""
        self.follow()
        return self._publish()

    def _publish(self) -> EngineSnapshot:
        snap = self.engine.snapshot()
        for cb in list(self._subscribers):
            cb(snap)
        return snap

    # -- controls
    def pause(self) -> None:
        self.paused = True
        self.speed = None
        self._window.clear()

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
        self.pause()
        self.engine.step()
        self.sim_clock = self.engine.time
        return self.publish()

    def faster(self) -> float:
        self.time_scale = _next_scale(self.time_scale, +1)
        self._window.clear()
        return self.time_scale

    def slower(self) -> float:
        self.time_scale = _next_scale(self.time_scale, -1)
        self._window.clear()
        return self.time_scale

    @property
    def behind(self) -> bool:
        """Running slower than asked over the last second: the machine cannot keep up."""
        return self.speed is not None and self.speed < BEHIND * self.time_scale

    def restart_clock(self) -> None:
        """Put the clock on the engine's time (before a fast-forward from where the run is)."""
        self.sim_clock = self.engine.time

    def clamp_clock(self) -> None:
        """After a change that may have put the engine back (a dial that restarted the run): the
        clock is not left ahead of the engine's time, or the frames after it would race to catch
        up, and a frame in progress aims at the new start from its next step. A clock behind the
        engine (waiting for it after an overshoot) stays where it is."""
        self.sim_clock = min(self.sim_clock, self.engine.time)

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    # -- the loop
    def advance(self, real_seconds: float, deadline: float | None = None) -> int:
        """Run the iterations that fit in `real_seconds` of wall time at the current scale, and
        bring the followers to the same clock. With a `deadline` (a reading of `clock`) the work
        stops there, a slice of iterations at a time: the simulated clock then falls behind, and
        the debt is dropped rather than piled up. Returns the iterations run (this engine's)."""
        return sum(self.frame_work(real_seconds, deadline))

    def frame_work(self, real_seconds: float, deadline: float | None = None,
                   chunk: float | None = None) -> Iterator[int]:
        """`advance` as steps the caller runs one by one, each yielding the iterations it ran:
        with a `chunk`, a step stops after about that much wall time, so the caller can answer
        keys in between (the run loop does). The `deadline` bounds the engines' own time: what
        the caller does between steps does not count against it. The target is read afresh at
        each step: a dial that restarted the run meanwhile (`sim_clock` put back) is not raced
        after. The frame is settled (debt dropped, speed measured) when the steps end or the
        caller closes them."""
        engine = self.engine
        start = (engine.time, engine.iteration)
        left = None if deadline is None else deadline - self.clock()
        self._aim(real_seconds)
        try:
            while left is None or left > 0:
                began = self.clock()
                until = None if left is None else began + left
                if chunk is not None:
                    until = began + chunk if until is None else min(until, began + chunk)
                n, more = self._work(until)
                if left is not None:
                    left -= self.clock() - began
                yield n
                if not more:
                    return
        finally:
            self._settle(real_seconds, start)

    def _aim(self, real_seconds: float) -> None:
        """Move the simulated clock on by `real_seconds` at the current scale."""
        # The clock may lag the engine (an iteration overshoots it, or the engine jumped over an
        # idle gap to the next arrival); then the engine waits for the clock to catch up, but
        # never for more than about ten frames: a long idle stretch is not worth watching.
        engine = self.engine
        self.sim_clock = max(self.sim_clock, engine.time - 10.0 * max(real_seconds, 0.1) * self.time_scale)
        self.sim_clock += real_seconds * self.time_scale

    def _work(self, deadline: float | None) -> tuple[int, bool]:
        """Iterations towards `sim_clock` until it is reached or the `deadline` passes;
        returns (iterations run, whether there is more to do)."""
        engine = self.engine
        n = 0
        while True:
            if not self.follow(deadline):
                return n, True  # the deadline passed while the followers caught up
            if engine.time >= self.sim_clock or engine.done:
                return n, False
            if deadline is not None and self.clock() >= deadline:
                return n, True
            before = (engine.time, engine.iteration)
            n += self._slice(engine, self.sim_clock, deadline)
            if (engine.time, engine.iteration) == before:
                return n, False  # nothing more to run before the target (finished, or nothing can move)

    def _settle(self, real_seconds: float, start: tuple[float, int]) -> None:
        """The end of a frame's work: a finished run pauses, a cut-short one drops its debt,
        and the speed reached is measured (not across a restart, which put the clock back)."""
        engine = self.engine
        if engine.done:
            self.paused = True
        if engine.time < self.sim_clock and not engine.done:
            self.sim_clock = engine.time  # cut short: drop the debt rather than pile it up
        if engine.iteration >= start[1]:
            self._measure(real_seconds, engine.time - start[0])

    def follow(self, deadline: float | None = None) -> bool:
        """Bring the followers to this engine's clock (by the `deadline`, if given); True if
        they got there."""
        target = self.engine.time
        for other in self.followers:
            while other.time < target and not other.done:
                if deadline is not None and self.clock() >= deadline:
                    return False
                before = (other.time, other.iteration)
                self._slice(other, target, deadline)
                if (other.time, other.iteration) == before:
                    break
        return True

    def _slice(self, engine: Engine, target: float, deadline: float | None) -> int:
        """One engine call towards `target`: all of it without a deadline, else as many
        iterations as should take half the time left (from what they have been taking)."""
        if deadline is None:
            return engine.advance_until(target)
        started = self.clock()
        per = self._per_iteration.get(id(engine))
        left = deadline - started
        count = 1 if per is None else max(1, min(MAX_SLICE, int(0.5 * left / max(per, 1e-7))))
        n = engine.advance_until(target, count)
        if n:
            took = (self.clock() - started) / n
            self._per_iteration[id(engine)] = took if per is None else 0.5 * (per + took)
        return n

    def _measure(self, real_seconds: float, simulated: float) -> None:
        """The speed reached over about the last second (frames of the run loop only)."""
        if real_seconds <= 0:
            return
        now = self.clock()
        window = self._window
        window.append((now, simulated, real_seconds))
        while len(window) > 1 and now - window[0][0] > 1.0:
            window.pop(0)
        asked = sum(w[2] for w in window)
        if asked >= 0.5:  # enough frames to say
            self.speed = sum(w[1] for w in window) / asked

    async def run(self) -> None:
        """Pace the engine until stopped. Sleeps while paused (no CPU used). A frame's work runs
        in chunks of `CHUNK` seconds with the app's turn between them; a key read in a turn ends
        the frame's work, so a key waits for about one chunk, not for the frame's whole share."""
        frame = 1.0 / self.fps
        last = self.clock()
        while not self._stopped:
            if self.paused:
                self._wake.clear()
                await self._wake.wait()
                last = self.clock()
                continue
            keys = self.keys() if self.keys is not None else None
            if keys != self._keys_seen:
                # A key came while the last frame slept: the app may still be answering it (Esc
                # leaving a dial posts a message, which moves the focus, which redraws: several
                # turns of the loop, each of which would wait for a chunk). Its moment first.
                self._keys_seen = keys
                await asyncio.sleep(KEY_GRACE)
                if self.paused or self._stopped:
                    continue
                keys = self._keys_seen = self.keys()
            now = self.clock()
            work = self.frame_work(now - last, deadline=now + WORK_SHARE * frame, chunk=CHUNK)
            engines = 0.0  # wall time the engines took; the rest of the frame so far was the app's
            while True:
                began = self.clock()
                if next(work, None) is None:
                    break
                engines += self.clock() - began
                await asyncio.sleep(0)  # the app's turn: a key that arrived is read
                if self.paused or self._stopped or (self.keys is not None and self.keys() != keys):
                    work.close()  # a key: the rest of the frame is the app's
                    self._keys_seen = self.keys() if self.keys is not None else None
                    break
            last = now
            if not self._stopped:
                self._publish()
            # Sleep out the frame, and never less than what the app is still owed of its share
            # (after an overrun too): the app draws and answers keys meanwhile.
            spent = self.clock() - now
            await asyncio.sleep(max(frame - spent, (1.0 - WORK_SHARE) * frame - (spent - engines)))

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
