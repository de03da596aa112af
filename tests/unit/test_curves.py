"""sim.curves on the real engine: a rate is measured at its steady state or said to have none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim.curves import find_knee, measure_rate, rate_sweep, runner
from sim.scenario import Scenario
from sim.workload import WorkloadSpec


# The tests share one rate sweep (`swept`): one worker computes it once.
pytestmark = pytest.mark.xdist_group("curves")

LESSON = Scenario(engine={"max_num_seqs": 256}, workload=WorkloadSpec(request_rate=10.0, num_prompts=400), seed=3)


@pytest.fixture(scope="module")
def swept():
    return rate_sweep(LESSON, [8.0, 24.0, 42.0], min_window=1500)


def test_points_past_saturation_have_no_steady_state(swept):
    saturated, points = swept
    assert 30.0 < saturated < 40.0  # the lesson's engine: 256 seats, 512 in / 256 out
    low, mid, past = points
    assert low.bounded and mid.bounded
    assert not past.bounded and "grows without bound" in past.note
    assert low.window["count"] >= 1500 and mid.window["count"] >= 1500


def test_a_steady_point_agrees_with_a_much_longer_run(swept):
    """What a curve draws below saturation is what a long run at that rate (other arrivals)
    measures, within the noise of a 1,500-request window (Poisson counts vary by about 2.6 %)."""
    _, points = swept
    mid = points[1]
    long_run = measure_rate(runner(replace(LESSON, seed=11)), 24.0, min_window=6000)
    assert long_run.bounded
    for key in ("median_ttft_ms", "median_tpot_ms", "p99_tpot_ms", "output_throughput"):
        assert mid.window[key] == pytest.approx(long_run.window[key], rel=0.08), key
    assert mid.window["request_throughput"] == pytest.approx(24.0, rel=0.08)  # the offered load is carried


def test_the_knee_comes_before_the_first_unbounded_point():
    knee = find_knee([8, 24, 42], [2000, 6000, 8800], [30, 60, 90], bounded=[True, True, False])
    assert (knee.index, knee.reason) == (1, "unbounded")
    assert "grows without bound" in knee.explain([8, 24, 42], "rate")
    first = find_knee([50, 60], [9000, 9000], [1e5, 2e5], bounded=[False, False])
    assert first.index is None and first.reason == "unbounded"
    assert find_knee([1, 2, 4], [100, 200, 400], [20, 20, 21]).index is None
