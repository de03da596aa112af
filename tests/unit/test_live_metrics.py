"""The live view's numbers (what the metrics pane shows while a step runs) against what the run
really did: rates at high iteration rates, and percentiles per pool."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.engine import Engine, run_scenario
from tests import shared_steps


LIVE_SECONDS = 12.0
"""Simulated seconds a live run goes before its rates are read: past the ten-second window."""


@pytest.fixture(scope="module")
def lesson():
    return shared_steps.by_number()


@pytest.mark.parametrize("rate", [1000.0, pytest.param(2000.0, marks=pytest.mark.thorough)])
def test_live_rates_hold_when_thousands_of_iterations_run_in_the_window(lesson, rate):
    """Step 4's embedder at max batch size 1 runs one pass per request: thousands of iterations
    in the ten-second window, more than the live buffer keeps. Below capacity the live rates are
    the offered rate (they once read 410 requests/s whatever the traffic)."""
    sc = lesson[4].scenario.with_engine(max_batch_size=1).with_workload(request_rate=rate)
    engine = Engine(sc, live=True)
    engine.advance_until(LIVE_SECONDS)
    snap = engine.snapshot()
    assert snap.iteration > 4096 * 2  # well past what the buffer holds for ten seconds
    assert snap.metrics.requests_per_s == pytest.approx(rate, rel=0.05)
    assert snap.metrics.output_tokens_per_s == pytest.approx(rate, rel=0.05)  # one output each


def test_live_rates_past_capacity_are_the_saturated_rate(lesson):
    sc = lesson[4].scenario.with_engine(max_batch_size=1)
    saturated = run_scenario(sc.with_workload(request_rate=math.inf, num_prompts=5000)).metrics["request_throughput"]
    engine = Engine(sc.with_workload(request_rate=3000.0), live=True)
    engine.advance_until(LIVE_SECONDS)
    assert engine.snapshot().metrics.requests_per_s == pytest.approx(saturated, rel=0.05)


def test_live_rates_at_a_few_iterations_per_second_are_unchanged(lesson):
    """Where the buffer covers the window, the rate is what finished in the last ten seconds."""
    engine = Engine(lesson[9].scenario)
    engine.run(until_time=40.0)
    records = engine.metrics.records
    done = sum(1 for r in records if 30.0 < r.arrival_time + r.e2e <= engine.time)
    view = engine.snapshot().metrics
    assert view.requests_per_s == pytest.approx(done / (engine.time - 30.0), rel=0.02)


def test_live_percentiles_per_pool_are_those_of_the_recent_requests(lesson):
    """Step 18 reads TTFT and TPOT per pool: the live view carries them, over the same recent
    requests as the headline percentiles."""
    engine = Engine(lesson[18].scenario)
    engine.run(until_time=80.0)
    pools = {p.pool: p for p in engine.snapshot().metrics.pools}
    assert set(pools) == {"chat", "batch"}
    recent = engine.metrics.records[-engine.metrics.window:]
    for name, view in pools.items():
        mine = [r for r in recent if r.pool == name]
        assert view.completed == len(mine)
        assert view.ttft_p99 == pytest.approx(float(np.percentile([r.ttft for r in mine], 99)))
        assert view.tpot_p50 == pytest.approx(float(np.median([r.tpot for r in mine])))
    # Batch jobs carry four times the prompt: their own TTFT is the longer one.
    assert pools["batch"].ttft_p50 > pools["chat"].ttft_p50


def test_one_pool_has_no_per_pool_lines(lesson):
    engine = Engine(lesson[9].scenario)
    engine.run(until_time=10.0)
    assert engine.snapshot().metrics.pools == ()


@pytest.mark.parametrize("number", [6, 10])
def test_the_iteration_time_split_recombines_to_the_iteration(lesson, number):
    """The iteration view shows weights, KV, compute and the rest beside the iteration's time.
    Weights and compute overlap (sqrt of the sum of squares); the other parts add. Whatever the
    iteration (decode only, or a 16,000-token prefill on step 10), the parts the report carries
    recombine to its duration: the sum a learner makes is the one the engine made."""
    from sim.workload import LengthSpec

    sc = lesson[number].scenario.with_workload(num_prompts=200)
    if number == 10:
        sc = sc.with_workload(input=LengthSpec(dist="mixed", mean=512, long_len=16000, long_share=0.05))
    engine = Engine(sc)
    seen = set()
    while (report := engine.step()) is not None:
        cost = report.cost
        assert cost.linear == pytest.approx(math.hypot(cost.weights, cost.compute), rel=1e-12)
        assert sum(seconds for _, seconds in cost.terms()) == pytest.approx(report.duration, rel=1e-12)
        assert cost.weights + cost.compute + cost.kv_read + cost.prefill_attention + cost.allreduce \
            + cost.overhead > report.duration  # the plain sum overstates it
        seen.add(cost.linear_binding)
    assert seen == {"weights", "compute"}  # decode iterations and prefill-heavy ones both ran
