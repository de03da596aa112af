"""The bridge between the simulator and the app: one engine (and an optional comparison engine
on the same arrivals) paced by one `sim.driver.Driver`, whose snapshots are posted as messages.

The driver's `run()` is the only worker (started by the app's clock, `batchtui/clock.py`);
widgets never touch the engine, they receive `SimulationFrame` messages. Under a test's manual
clock no worker runs: tests advance by single iterations or `fast_forward`, so nothing ticks
while a screenshot is taken.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.message import Message

from sim import dials
from sim.driver import Driver
from sim.engine import Engine
from sim.reports import EngineSnapshot
from sim.scenario import Scenario


class SimulationFrame(Message):
    """A new state of the live simulation (and of the comparison run, if the step has one)."""

    def __init__(self, origin: "LiveSimulation", snapshot: EngineSnapshot,
                 compare: EngineSnapshot | None) -> None:
        super().__init__()
        self.origin = origin
        """The simulation that sent it: frames from a step already left are dropped."""
        self.snapshot = snapshot
        self.compare = compare


@dataclass(frozen=True, slots=True)
class SweepResult:
    """Points for one curve of the curve view: (rate or batch size, tokens/s, latency in s)."""

    points: tuple[tuple[float, float, float], ...]
    latency_label: str
    latency_attribute: str
    """The live metric (a `sim.reports.MetricsView` field) that matches the latency axis."""
    load_label: str
    """What the first number of a point is: "batch" or "req/s"."""
    bounded: tuple[bool, ...] = ()
    """Per point, False where the queue grows without bound (a rate with no steady state, whose
    latency measures only the run's length); empty when every point is bounded."""
    saturated: float | None = None
    """The swept scenario's saturated request rate (req/s), for a rate sweep."""
    slo: float | None = None
    """A latency objective (s) to draw across the curve, when the step sets one."""


def keys_read(app) -> Callable[[], object] | None:
    """The reading a live simulation watches for keys (`LiveSimulation(keys=...)`): the app's
    count of keys read, if it keeps one."""
    if not hasattr(app, "keys_read"):
        return None
    return lambda: app.keys_read


class LiveSimulation:
    """Owns the engines and the driver for one step."""

    def __init__(self, scenario: Scenario, post: Callable[[SimulationFrame], object], *,
                 fps: float = 10.0, compare: Scenario | None = None, time_scale: float = 1.0,
                 compare_keeps: tuple[str, ...] = (), keys: Callable[[], object] | None = None) -> None:
        """`compare_keeps`: dials the comparison run keeps as they are when the main run's move
        (besides those on which the two scenarios already differ). `keys`: a reading that
        changes when a key arrives (`BatchApp.keys_read`): a frame's work stops for it."""
        self.post = post
        self.engine = Engine(scenario, live=True)
        self.compare_engine = Engine(compare, live=True) if compare is not None else None
        # Dials on which the comparison deliberately differs stay its own (step 17 compares a
        # 64-seat chat cap with the offline batch: moving the seats dial must not erase it).
        self._compare_own: set[str] = set()
        if compare is not None:
            self._compare_own = dials.differing(scenario, compare) | set(compare_keeps)
        self.driver = Driver(self.engine, time_scale=time_scale, fps=fps, keys=keys)
        if self.compare_engine is not None:
            # The comparison run follows the main one's clock, so both show the same moment;
            # the driver advances it within the frame's share of time, as the main one.
            self.driver.followers.append(self.compare_engine)
        self.driver.subscribe(self._on_snapshot)
        self._in_flight = False
        """A frame is posted and not yet shown: the next waits (see `_on_snapshot`)."""
        self._waiting: SimulationFrame | None = None

    # -- what a screen asks of the run (nothing reaches into the engine from a screen)
    @property
    def scenario(self) -> Scenario:
        """The scenario the run is on now: the step's, with every dial moved since."""
        return self.engine.scenario

    def snapshot(self):
        """The run's state now (`sim.reports.EngineSnapshot`)."""
        return self.engine.snapshot()

    @property
    def time(self) -> float:
        """The run's simulated time now (s)."""
        return self.engine.time

    @property
    def started(self) -> bool:
        """Whether the run has gone an iteration since it (re)started."""
        return self.engine.iteration > 0

    @property
    def done(self) -> bool:
        """Whether a finite workload has run to its end."""
        return self.engine.done

    # -- controls
    @property
    def running(self) -> bool:
        return not self.driver.paused

    @property
    def time_scale(self) -> float:
        return self.driver.time_scale

    @property
    def behind(self) -> bool:
        """Running slower than `time_scale`: the machine cannot do a frame's work in its time."""
        return self.running and self.driver.behind

    @property
    def speed(self) -> float | None:
        """The speed reached over the last second (simulated seconds per second)."""
        return self.driver.speed

    def run_pause(self) -> bool:
        """Toggle; True if now running."""
        if self.engine.done:
            return False
        return self.driver.toggle()

    def pause(self) -> None:
        self.driver.pause()

    def resume(self) -> None:
        if not self.engine.done:
            self.driver.resume()

    def single_iteration(self) -> None:
        self.driver.single_step()

    def faster(self) -> float:
        return self.driver.faster()

    def slower(self) -> float:
        return self.driver.slower()

    def set_dial(self, path: str, value) -> None:
        """Apply a dial to the live run (and the comparison run). Raises SimError if refused."""
        before = self.engine.iteration
        self.engine.set_dial(path, value)
        restarted = self.engine.iteration < before
        if self.compare_engine is not None:
            if path not in self._compare_own:
                self.compare_engine.set_dial(path, value)
            if restarted and self.compare_engine.iteration:
                # The run beside starts over with this one, on the same arrivals: it only
                # advances to the main run's clock, so left ahead it would stand still.
                self.compare_engine.reset()
        self.driver.clamp_clock()  # some dials restart the run
        self.publish()

    def fast_forward(self, seconds: float) -> None:
        """Run `seconds` of simulated time at once, then publish one frame (tests and
        screenshots: the same result every time, with no clock involved)."""
        self.driver.pause()
        self.driver.restart_clock()
        scale = self.driver.time_scale
        self.driver.advance(seconds / scale)
        self.publish()

    def publish(self) -> None:
        """Send the current state now (after a change made while paused)."""
        self.driver.publish()

    async def run(self) -> None:
        """The worker body: pace the engine until `stop()`."""
        await self.driver.run()

    def stop(self) -> None:
        self.driver.stop()

    # -- frames
    def frame(self, snapshot: EngineSnapshot | None = None) -> SimulationFrame:
        """The run's state (now, or `snapshot` with the comparison run's now) as a frame, not
        posted: a step change draws its run's first state itself."""
        compare = self.compare_engine.snapshot() if self.compare_engine is not None else None
        return SimulationFrame(self, snapshot or self.engine.snapshot(), compare)

    def _on_snapshot(self, snapshot: EngineSnapshot) -> None:
        frame = self.frame(snapshot)
        if self._in_flight:
            # The app has not drawn the last frame yet (a busy machine): keep only the newest,
            # so frames never queue up ahead of the learner's keys.
            self._waiting = frame
            return
        self._in_flight = True
        self.post(frame)

    def frame_shown(self) -> None:
        """The app has handled the last frame posted: post the newest one held back, if any."""
        self._in_flight = False
        frame, self._waiting = self._waiting, None
        if frame is not None:
            self._in_flight = True
            self.post(frame)


def batch_sweep(scenario: Scenario, batch_sizes, context: int = 640) -> SweepResult:
    """Decode iterations of fixed batch sizes, every sequence holding `context` tokens: the
    cost model's time per iteration (each user's time per token) and tokens/s. Instant."""
    cost = scenario.cost_model()
    points = []
    for batch in batch_sizes:
        t = cost.iteration(batch, batch * context, ()).total
        points.append((float(batch), batch / t, t))
    return SweepResult(tuple(points), "time/token", "tpot_p50", "batch")


def rate_sweep(scenario: Scenario, rates, num_prompts: int = 1000, slo: float | None = None) -> SweepResult:
    """Each request rate measured at its steady state (`sim.curves.rate_sweep`, the measure the
    command line uses): TTFT p99 and the tokens/s of a steady window holding at least
    `num_prompts` requests (more near saturation); a rate above the saturated rate (the highest
    the engine sustains, `sim.curves.saturation`) has no steady state and is marked unbounded.
    About a second for step 7's nine rates: run it in a worker."""
    from sim.curves import rate_sweep as measure

    saturated, measured = measure(scenario, [float(r) for r in rates], min_window=num_prompts)
    points = tuple((p.rate, p.window["output_throughput"], p.window["p99_ttft_ms"] / 1000.0) for p in measured)
    return SweepResult(points, "TTFT p99", "ttft_p99", "req/s", bounded=tuple(p.bounded for p in measured),
                       saturated=saturated, slo=slo)


def run_sweep(scenario: Scenario, batch_sizes=(), context: int = 640, rates=(),
              num_prompts: int = 1000, slo: float | None = None) -> tuple[SweepResult, ...]:
    """Every curve a step's [sweep] asks for: the batch sweep first, then the rate sweep."""
    results = []
    if batch_sizes:
        results.append(batch_sweep(scenario, batch_sizes, context))
    if rates:
        results.append(rate_sweep(scenario, rates, num_prompts, slo))
    return tuple(results)
