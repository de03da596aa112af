"""The driver bounds a frame's simulation work by wall time, so keys are answered however heavy
the simulation or busy the machine: the simulated clock falls behind instead, and says so.

Time here is a manual clock that moves only when the engine works (each iteration costs a fixed
amount of "wall" time), so nothing depends on how fast or busy the machine running the test is."""

from __future__ import annotations

import asyncio

import pytest

from sim.driver import BEHIND, CHUNK, KEY_GRACE, MAX_SLICE, WORK_SHARE, Driver
from sim.engine import Engine
from sim.scenario import Scenario
from sim.workload import WorkloadSpec


class CostlyEngine:
    """An Engine whose every iteration moves a manual wall clock by `cost` seconds."""

    def __init__(self, engine: Engine, clock: list[float], cost: float) -> None:
        self.engine, self.clock, self.cost = engine, clock, cost
        self.calls: list[int | None] = []

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def advance_until(self, time: float, max_iterations: int | None = None) -> int:
        self.calls.append(max_iterations)
        n = self.engine.advance_until(time, max_iterations)
        self.clock[0] += n * self.cost
        return n


def live(rate: float = 50.0, seed: int = 1) -> Engine:
    return Engine(Scenario(workload=WorkloadSpec(request_rate=rate, num_prompts=0), seed=seed), live=True)


def run_sleeping(driver: Driver, on_sleep) -> list[float]:
    """Run `driver` until it stops, each `asyncio.sleep(s)` it asks for handed to `on_sleep(s)`
    instead of waited out; returns the sleeps asked, in order."""
    slept = []

    async def main():
        real_sleep = asyncio.sleep

        async def sleep(seconds):
            slept.append(seconds)
            on_sleep(seconds)
            await real_sleep(0)

        asyncio.sleep = sleep
        try:
            driver.resume()
            await driver.start()
        finally:
            asyncio.sleep = real_sleep

    asyncio.run(main())
    return slept


def test_a_frame_s_work_stops_at_its_deadline_and_the_clock_falls_behind():
    now = [0.0]
    engine = CostlyEngine(live(), now, cost=0.002)  # 2 ms of wall time per iteration: slow
    driver = Driver(engine, time_scale=30.0, fps=10, clock=lambda: now[0])
    frame = 0.1
    deadline = now[0] + WORK_SHARE * frame
    driver.advance(frame, deadline=deadline)
    # It stopped within one slice of the deadline (never one call of 20,000 iterations)...
    assert now[0] <= deadline + 0.002 * max(c for c in engine.calls if c is not None)
    assert now[0] >= 0.5 * deadline
    assert all(c is not None and c <= MAX_SLICE for c in engine.calls)
    # ... short of the 3 simulated seconds asked: the debt is dropped, not piled up.
    assert engine.time < 3.0
    assert driver.sim_clock == engine.time


def test_slices_are_sized_from_what_iterations_cost():
    now = [0.0]
    engine = CostlyEngine(live(), now, cost=0.01)  # 10 ms an iteration: a slice of one at a time
    driver = Driver(engine, time_scale=30.0, fps=10, clock=lambda: now[0])
    driver.advance(0.1, deadline=now[0] + 0.04)
    assert engine.calls[0] == 1 and max(engine.calls) <= 2
    assert now[0] <= 0.04 + 0.02


def test_the_speed_reached_is_measured_and_a_slow_run_says_it_is_behind():
    now = [0.0]
    engine = CostlyEngine(live(), now, cost=0.002)
    driver = Driver(engine, time_scale=30.0, fps=10, clock=lambda: now[0])
    driver.resume()
    for _ in range(15):  # 1.5 s of frames, each given 40 ms of work
        start = now[0]
        driver.advance(0.1, deadline=start + WORK_SHARE * 0.1)
        now[0] = start + 0.1
    assert driver.speed is not None and driver.speed < BEHIND * 30.0
    assert driver.behind


def test_a_light_run_keeps_up_and_is_not_behind():
    now = [0.0]
    engine = CostlyEngine(live(rate=2.0), now, cost=0.00001)
    driver = Driver(engine, time_scale=1.0, fps=10, clock=lambda: now[0])
    driver.resume()
    for _ in range(15):
        start = now[0]
        driver.advance(0.1, deadline=start + WORK_SHARE * 0.1)
        now[0] = start + 0.1
    assert abs(engine.time - 1.5) < 0.05
    assert driver.speed is not None and not driver.behind
    driver.pause()
    assert driver.speed is None and not driver.behind


def test_a_follower_is_advanced_within_the_same_deadline():
    now = [0.0]
    main = CostlyEngine(live(seed=1), now, cost=0.001)
    beside = CostlyEngine(live(seed=1), now, cost=0.003)  # the run beside is the heavy one
    driver = Driver(main, time_scale=30.0, fps=10, clock=lambda: now[0])
    driver.followers.append(beside)
    deadline = 0.04
    driver.advance(0.1, deadline=deadline)
    assert now[0] <= deadline + 0.01
    assert beside.calls and all(c is not None for c in beside.calls)
    assert beside.time <= main.time
    # Without a deadline (a test's fast-forward, a single step) it is brought level.
    driver.publish()
    assert beside.time >= main.time


def test_without_a_deadline_the_whole_stretch_runs():
    now = [0.0]
    engine = CostlyEngine(live(), now, cost=0.002)
    driver = Driver(engine, time_scale=1.0, fps=10, clock=lambda: now[0])
    driver.advance(2.0)
    assert engine.time >= 2.0
    assert engine.calls == [None]


def test_the_run_loop_gives_each_frame_s_work_a_deadline_and_yields_the_rest():
    now = [0.0]
    engine = live()
    driver = Driver(engine, time_scale=30.0, fps=10, clock=lambda: now[0])
    asked = []

    def frame_work(real_seconds, deadline=None, chunk=None):
        asked.append((now[0], deadline, chunk))
        now[0] += 0.5  # far past the deadline: an overrun
        if len(asked) == 3:
            driver.stop()
        yield 0

    driver.frame_work = frame_work
    slept = run_sleeping(driver, lambda seconds: None)
    assert [deadline - start for start, deadline, _ in asked] == pytest.approx([WORK_SHARE * 0.1] * 3)
    assert all(chunk == CHUNK for _, _, chunk in asked)
    # Even after an overrun the loop sleeps the app's share of the frame.
    frame_sleeps = [s for s in slept if s > 0]
    assert frame_sleeps and min(frame_sleeps) >= (1 - WORK_SHARE) * 0.1 - 1e-9


def test_a_frame_s_work_comes_in_chunks_that_each_end_near_their_own_deadline():
    now = [0.0]
    engine = CostlyEngine(live(), now, cost=0.0002)  # 0.2 ms an iteration: a heavy run at 30x
    driver = Driver(engine, time_scale=30.0, fps=10, clock=lambda: now[0])
    deadline = WORK_SHARE * 0.1
    ends = [now[0] for _ in driver.frame_work(0.1, deadline=deadline, chunk=CHUNK)]
    assert len(ends) >= 3  # the 40 ms share came as several turns, not one
    starts = [0.0] + ends[:-1]
    assert all(end - start <= CHUNK + 0.0002 * MAX_SLICE for start, end in zip(starts, ends))
    assert max(end - start for start, end in zip(starts, ends)) <= 2 * CHUNK
    assert ends[-1] <= deadline + 2 * CHUNK
    # Settled as `advance` settles: the debt dropped, not piled up.
    assert driver.sim_clock == engine.time


def test_keys_are_answered_between_the_chunks_of_a_frame():
    """The app's turn comes within a chunk of a key's arrival, not after the frame's share."""
    now = [0.0]
    engine = CostlyEngine(live(), now, cost=0.0002)
    driver = Driver(engine, time_scale=30.0, fps=10, clock=lambda: now[0])
    answered = []

    async def key():
        answered.append(now[0])
        driver.stop()

    async def main():
        driver.resume()
        task = driver.start()
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(key()))
        await task

    asyncio.run(main())
    assert answered and answered[0] <= 2 * CHUNK < WORK_SHARE * 0.1


def test_a_restart_mid_frame_is_not_raced_after_and_does_not_read_as_a_speed():
    now = [0.0]
    engine = CostlyEngine(live(), now, cost=0.0002)
    driver = Driver(engine, time_scale=30.0, fps=10, clock=lambda: now[0])
    driver.advance(0.1)  # a first frame: 3 simulated seconds in
    work = driver.frame_work(0.1, deadline=now[0] + WORK_SHARE * 0.1, chunk=CHUNK)
    next(work)
    assert driver.sim_clock > engine.time + 1.0  # the frame aims 3 simulated seconds ahead
    engine.reset()  # a dial restarted the run between two chunks
    driver.clamp_clock()  # as the app's set_dial does
    assert driver.sim_clock == engine.time == 0.0
    for _ in work:
        pass
    assert engine.time <= 0.01
    assert driver.speed is None or driver.speed >= 0


def test_the_app_s_dial_that_restarts_the_run_clamps_the_clock_mid_frame():
    """The app's `set_dial` (batchtui.simulation) puts the clock back with the driver's own clamp."""
    from batchtui.simulation import LiveSimulation

    sim = LiveSimulation(Scenario(workload=WorkloadSpec(request_rate=50.0, num_prompts=0), seed=1),
                         post=lambda frame: None, time_scale=30.0)
    sim.driver.advance(0.1)  # 3 simulated seconds
    work = sim.driver.frame_work(0.1, chunk=0.0)  # a frame aimed 3 s further, stopped before its work
    next(work)
    assert sim.driver.sim_clock > sim.engine.time + 1.0
    sim.set_dial("seed", 2)  # restarts the run
    assert sim.engine.time == 0.0 and sim.driver.sim_clock == 0.0
    work.close()
    sim.driver.advance(0.1)
    assert sim.engine.time < 3.5  # one frame's 3 s from the new start, not the old clock's 6


def test_the_app_s_turns_between_chunks_do_not_eat_the_engine_s_share():
    """On a busy machine the app's turns take long; the engines still get their whole share."""
    now = [0.0]
    engine = CostlyEngine(live(), now, cost=0.0002)
    driver = Driver(engine, time_scale=30.0, fps=10, clock=lambda: now[0])
    share = WORK_SHARE * 0.1
    ran = 0
    for n in driver.frame_work(0.1, deadline=now[0] + share, chunk=CHUNK):
        ran += n
        now[0] += 0.02  # the app draws a frame between two chunks: 20 ms
    assert 0.8 * share <= ran * 0.0002 <= share + 2 * CHUNK


def test_a_chunk_that_ends_while_the_follower_catches_up_leaves_the_rest_of_the_frame_to_run():
    now = [0.0]
    main = CostlyEngine(live(seed=1), now, cost=0.0001)
    beside = CostlyEngine(live(seed=1), now, cost=0.0003)  # the comparison run is the heavy one
    driver = Driver(main, time_scale=30.0, fps=10, clock=lambda: now[0])
    driver.followers.append(beside)
    share = WORK_SHARE * 0.1
    steps = list(driver.frame_work(0.1, deadline=now[0] + share, chunk=CHUNK))
    assert len(steps) >= 3
    assert now[0] >= share - CHUNK  # the frame used its share, not one chunk of it


def keyed_driver():
    """A driver at 30x on a manual clock (`now[0]`) over an engine whose iterations cost 0.2 ms,
    reading keys from `keys[0]` (a test adds one to press a key)."""
    now = [0.0]
    keys = [0]
    engine = CostlyEngine(live(), now, cost=0.0002)
    return now, keys, Driver(engine, time_scale=30.0, fps=10, clock=lambda: now[0], keys=lambda: keys[0])


def test_a_key_read_mid_frame_ends_the_frame_s_work_at_the_next_chunk():
    now, keys, driver = keyed_driver()
    chunks = []
    real_work = driver.frame_work

    def frame_work(*args, **kwargs):
        for n in real_work(*args, **kwargs):
            chunks.append(now[0])
            if len(chunks) == 2:
                keys[0] += 1  # a key arrives during the app's turn after the second chunk
            yield n

    driver.frame_work = frame_work
    driver.subscribe(lambda snapshot: driver.stop())  # one frame
    driver.sim_clock = 3.0  # 3 simulated seconds to catch up: more than a frame's share

    async def main():
        driver.resume()
        await driver.start()

    asyncio.run(main())
    assert len(chunks) == 2  # no third chunk: the rest of the frame was the app's
    assert chunks[-1] <= 2 * CHUNK + 0.0002 * MAX_SLICE


def test_a_key_that_came_while_the_frame_before_slept_gets_its_moment_before_the_work():
    now, keys, driver = keyed_driver()
    frames = []
    driver.subscribe(lambda snapshot: frames.append(now[0]))

    def on_sleep(seconds):
        if seconds > KEY_GRACE:  # a frame's sleep: a key arrives meanwhile, once
            now[0] += seconds
            if len(frames) == 1:
                keys[0] += 1
            if len(frames) == 3:
                driver.stop()

    slept = run_sleeping(driver, on_sleep)
    graces = [s for s in slept if s == KEY_GRACE]
    assert graces == [KEY_GRACE]  # once, for the one key, before the second frame's work
    assert slept.index(KEY_GRACE) < len(slept) - 1
