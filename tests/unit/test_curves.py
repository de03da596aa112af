"""sim.curves on the real engine: a rate is measured at its steady state or said to have none."""

from __future__ import annotations

import threading
import time
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


# -- a process keeps its sweeps ---------------------------------------------------------------------

def _counting(monkeypatch, pause: float = 0.0) -> list[float]:
    """Every rate `rate_sweep` measures from now on (a saturation counts as inf)."""
    from sim import curves

    measured: list[float] = []
    measure, saturated = curves.measure_rate, curves.saturation

    def measure_counted(run_at, rate, **kwargs):
        measured.append(rate)
        return measure(run_at, rate, **kwargs)

    def saturated_counted(run_at, num_prompts, **kwargs):
        measured.append(float("inf"))
        time.sleep(pause)  # (two threads asking at once overlap here)
        return saturated(run_at, num_prompts, **kwargs)

    monkeypatch.setattr(curves, "measure_rate", measure_counted)
    monkeypatch.setattr(curves, "saturation", saturated_counted)
    return measured


SMALL = Scenario(engine={"max_num_seqs": 32}, workload=WorkloadSpec(request_rate=4.0, num_prompts=60), seed=424242)


def test_a_sweep_asked_again_is_the_one_measured(monkeypatch):
    measured = _counting(monkeypatch)
    first = rate_sweep(SMALL, [2.0, 4.0], min_window=50, saturation_prompts=100)
    again = rate_sweep(SMALL, [2.0, 4.0], min_window=50, saturation_prompts=100)
    assert measured == [float("inf"), 2.0, 4.0]
    assert again == first and again[1] is not first[1]  # the same points in a list of its own
    again[1].clear()
    assert len(rate_sweep(SMALL, [2.0, 4.0], min_window=50, saturation_prompts=100)[1]) == 2
    # Anything else is measured: other rates, settings or scenario (a scenario's saturation is
    # kept on its own, `saturated_point`: the lessons' figures read it too).
    rate_sweep(SMALL, [2.0], min_window=50, saturation_prompts=100)
    rate_sweep(SMALL, [2.0, 4.0], min_window=60, saturation_prompts=100)
    rate_sweep(replace(SMALL, seed=424243), [2.0, 4.0], min_window=50, saturation_prompts=100)
    assert len(measured) == 3 + 1 + 2 + 3


def test_a_sweep_asked_from_two_threads_at_once_is_measured_once(monkeypatch):
    measured = _counting(monkeypatch, pause=0.3)
    scenario = replace(SMALL, seed=424244)
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        rate_sweep(scenario, [2.0, 4.0], min_window=50, saturation_prompts=100))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert measured == [float("inf"), 2.0, 4.0] and results[0] == results[1]


def test_a_failed_sweep_is_not_kept_and_a_callable_setting_is_never_kept(monkeypatch):
    from sim import curves

    measured = _counting(monkeypatch)
    scenario = replace(SMALL, seed=424245)
    broken = curves.measure_rate

    def fails(run_at, rate, **kwargs):
        broken(run_at, rate, **kwargs)
        raise RuntimeError("a run failed")

    monkeypatch.setattr(curves, "measure_rate", fails)
    with pytest.raises(RuntimeError):
        rate_sweep(scenario, [2.0], min_window=50, saturation_prompts=100)
    monkeypatch.setattr(curves, "measure_rate", broken)
    rate_sweep(scenario, [2.0], min_window=50, saturation_prompts=100)  # measured again (its saturation kept)
    assert measured == [float("inf"), 2.0, 2.0]
    for _ in range(2):
        rate_sweep(scenario, [2.0], min_window=50, saturation_prompts=100, enough=lambda summary: False)
    assert len(measured) == 3 + 1 + 1


def test_a_steady_point_and_a_saturated_run_asked_again_are_the_ones_measured(monkeypatch):
    """`steady_point` and `saturated_point` (what the lessons' figures and drills read): an equal
    scenario asked again, even as another object, gets the measurement already made; another
    rate, window, request count or scenario is measured."""
    from sim.curves import saturated_point, steady_point

    measured = _counting(monkeypatch)
    scenario = replace(SMALL, seed=424246)
    first = saturated_point(scenario, 100)
    assert saturated_point(replace(scenario), 100) is first and measured == [float("inf")]
    point = steady_point(scenario, 2.0, saturated=5.0, min_window=50)
    assert steady_point(replace(scenario), 2.0, saturated=5.0, min_window=50) is point
    assert measured == [float("inf"), 2.0]
    steady_point(scenario, 3.0, saturated=5.0, min_window=50)
    steady_point(scenario, 2.0, saturated=5.0, min_window=60)
    steady_point(replace(scenario, seed=424247), 2.0, saturated=5.0, min_window=50)
    saturated_point(scenario, 120)
    assert measured == [float("inf"), 2.0, 3.0, 2.0, 2.0, float("inf")]


def test_a_kept_measurement_is_made_again_once_a_file_the_scenario_reads_changes(monkeypatch, tmp_path):
    from sim.curves import saturated_point

    measured = _counting(monkeypatch)
    profiles = tmp_path / "profiles.toml"
    profiles.write_text("# my profiles\n")
    scenario = replace(SMALL, seed=424248, profiles_path=str(profiles))
    first = saturated_point(scenario, 100)
    assert saturated_point(scenario, 100) is first and len(measured) == 1
    profiles.write_text("# my profiles, edited\n")
    assert saturated_point(scenario, 100) is not first and len(measured) == 2
