"""The arithmetic behind `sweep` and `plan` on made-up curves: where the knee is, how the SLO
search brackets and bisects, replicas, the KV-fit batch size, and the ASCII chart."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from types import SimpleNamespace

from sim import planning, rate_plan
from sim import curves
from batchtui.cli.asciichart import KNEE, POINT, scatter
from sim.planning import Slo, kv_fit_seats, replicas_needed
from sim.rate_plan import find_knee, plan_rate

# -- the knee ----------------------------------------------------------------------------------


def test_knee_is_the_last_point_before_ttft_grows_k_fold():
    rates = [1, 2, 4, 8, 16]
    tput = [100, 200, 400, 800, 1500]
    ttft = [20, 22, 30, 61, 500]
    assert rate_plan.KNEE_LATENCY_FACTOR == 4.0
    knee = find_knee(rates, tput, ttft)  # 500 > 4 x 20
    assert (knee.index, knee.reason) == (3, "latency")
    knee = find_knee(rates, tput, ttft, factor=3.0)  # 61 > 3 x 20
    assert (knee.index, knee.reason) == (2, "latency")
    assert "61.0 ms" in knee.detail and "3 x 20.0 ms" in knee.detail


def test_knee_is_the_last_point_before_throughput_stops_rising():
    rates = [1, 2, 4, 8, math.inf]
    tput = [100, 200, 400, 410, 412]  # +2.5 % at 8: stopped
    ttft = [20, 21, 22, 25, 40]
    knee = find_knee(rates, tput, ttft)
    assert (knee.index, knee.reason) == (2, "throughput")
    assert "+2.5%" in knee.detail


def test_closely_spaced_points_need_only_a_share_of_their_step():
    # rates 2 % apart: 0.5 % more throughput a step is still rising
    rates = [10.0, 10.2, 10.404, 10.612]
    tput = [1000, 1008, 1016, 1017]
    knee = find_knee(rates, tput, [20, 20, 20, 20])
    assert knee.index == 2 and knee.reason == "throughput"  # +0.8 % rises; +0.1 % stops it


def test_no_knee_while_the_curve_still_rises():
    knee = find_knee([1, 2, 4], [100, 200, 400], [20, 20, 21])
    assert knee.index is None
    assert "No knee" in knee.explain([1, 2, 4], "rate")
    assert find_knee([1], [100], [20]).index is None


# -- the SLO search on a made-up server ----------------------------------------------------------


@dataclass
class Rec:
    arrival_time: float
    ttft: float
    tpot: float | None
    e2e: float
    output_len: int = 100


@dataclass
class FakeSummary:
    metrics: dict
    records: list
    api_server_ceiling: float = math.inf  # (a made-up replica has no API server in front)


def small_windows(monkeypatch, requests: int) -> None:
    """Steady windows of `requests` requests, whatever their span in seconds."""
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW", requests)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW_S", 0.0)


def fake_server(capacity: float, tpot_at, sustains: float | None = None, thrash: float | None = None,
                ceiling: float = math.inf, waves: float | None = None):
    """A replica whose TPOT (s) depends only on the rate. All queued at once it completes
    `capacity` req/s; a stream it serves up to `sustains` req/s (default `capacity`: its service
    rate with a full queue), every request taking 1 s end to end; above that the backlog grows
    and so do E2E and TTFT, each request finishing 1/sustains s after the one before. `thrash`:
    above `sustains` the queue fills the KV cache and the replica preempts, serving only that.
    `ceiling`: what its API server sustains, as `RunSummary.api_server_ceiling` reports it.
    `waves`: offered more than 1.5 times `sustains`, its queue deep, it serves only that (without
    preempting), as fixed lengths admitted in waves do."""
    calls = []
    sustains = capacity if sustains is None else sustains

    def run_at(rate: float, n: int):
        calls.append((rate, n))
        if math.isinf(rate):
            recs = [Rec(0.0, 0.05, tpot_at(capacity), 1.0 + i / capacity) for i in range(n)]
            return FakeSummary({"request_throughput": capacity, "p99_ttft_ms": 50.0,
                                "p99_tpot_ms": tpot_at(capacity) * 1000, "num_preemptions": 0}, recs, ceiling)
        served = rate if rate <= sustains else (thrash or sustains)
        if waves is not None and rate > 1.5 * sustains:
            served = waves
        late = 1 / served - 1 / rate  # each arrival finishes this much later than the last
        recs = [Rec(i / rate, 0.02 + late * i, tpot_at(rate), 1.0 + late * i) for i in range(n)]
        return FakeSummary({"request_throughput": served, "p99_ttft_ms": 20.0, "p99_tpot_ms": tpot_at(rate) * 1000,
                            "num_preemptions": int(thrash is not None and rate > sustains)}, recs, ceiling)

    return run_at, calls


def test_plan_brackets_then_bisects_to_the_stated_precision(monkeypatch):
    small_windows(monkeypatch, 10)
    run_at, calls = fake_server(40.0, lambda r: 0.006 + 0.0005 * r)  # TPOT 20 ms at 28 req/s
    plan = plan_rate(run_at, Slo(tpot_p99_ms=20.0), num_prompts=200)
    assert plan.feasible and plan.limited_by == "slo"
    assert plan.best.rate <= 28.0 < plan.bracket_high
    assert plan.bracket_high - plan.best.rate == plan.precision <= 0.01 * 40.0
    stages = [p.stage for p in plan.points]
    assert stages[:8] == ["coarse"] * 8  # 4, 8, ..., 28 meet; 32 misses
    assert set(stages[8:]) == {"bisect"}
    assert calls[0][0] == math.inf


def test_plan_when_nothing_meets_the_slo(monkeypatch):
    small_windows(monkeypatch, 10)
    run_at, _ = fake_server(40.0, lambda r: 0.006 + 0.0005 * r)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=5.0), num_prompts=200)
    assert not plan.feasible
    assert [p.stage for p in plan.points] == ["coarse", "floor"]
    assert plan.closest.stage == "floor"  # the near-idle point misses by least


def test_plan_grows_a_run_whose_steady_window_is_too_short(monkeypatch):
    small_windows(monkeypatch, 100)
    run_at, calls = fake_server(40.0, lambda r: 0.006)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=20.0), num_prompts=50)
    assert all(p.window["count"] >= 100 for p in plan.points)
    assert any(n > 50 for _, n in calls[2:])  # after the saturation's two runs
    # nothing misses below saturation: the saturated rate bounds the answer from above
    assert plan.limited_by == "throughput"
    assert 0.99 * 40.0 <= plan.best.rate < 40.0 == plan.bracket_high


def test_the_saturated_rate_is_what_a_stream_sustains_not_a_burst(monkeypatch):
    # All-at-once measures 40 req/s; a full queue is served at 30: the saturated rate is 30. A
    # full queue serving less than the burst is degraded (`Saturation.degraded`, as an overloaded
    # API server is), so 30 is only a lower bound: the sweep goes on past it, each point judged on
    # its own run, and the points that do not settle miss.
    small_windows(monkeypatch, 10)
    run_at, calls = fake_server(40.0, lambda r: 0.006, sustains=30.0)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=20.0), num_prompts=400)
    assert plan.saturated_rate == pytest.approx(30.0, rel=0.01)
    assert plan.saturation.degraded and plan.cap is None
    assert plan.limited_by == "throughput"
    assert 30.0 <= plan.best.rate < 33.0 and plan.bracket_high < 33.0
    assert "does not settle" in plan.first_miss.misses[-1]
    assert any(p.rate == pytest.approx(33.0) and p.misses for p in plan.points)
    # A full queue served as fast as the burst (here at the rate a stream sustains) is exact: no
    # answer above it.
    run_at, calls = fake_server(30.0, lambda r: 0.006, sustains=30.0)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=20.0), num_prompts=400)
    assert not plan.saturation.degraded and plan.cap == plan.saturated_rate == pytest.approx(30.0, rel=0.01)
    assert plan.best.rate <= plan.saturated_rate == plan.bracket_high
    assert "above the saturated rate" in plan.first_miss.misses[-1]
    # A stream sustained past the all-at-once rate: answers may pass the burst's rate, never the
    # stream's.
    run_at, calls = fake_server(40.0, lambda r: 0.006, sustains=46.0)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=20.0), num_prompts=400)
    assert 40.0 < plan.best.rate <= plan.saturated_rate
    assert plan.saturated_rate == pytest.approx(46.0, rel=0.01)


def test_the_searched_rate_is_never_above_what_the_api_server_sustains():
    # The API server sustains 30 req/s and binds: past it the queue in front of the engine grows by
    # (rate - 30) requests a second, E2E climbing (rate / 30 - 1) s a second, under SUSTAIN_SLOPE
    # up to 30.3, so a long run 0.7 % past the ceiling reads as keeping up. The full queue serves
    # 30 and the burst 40 (degraded): the rate is searched, from the ceiling, which keeps up; the
    # search stops there (it once stepped to 31.8, then bisected to 30.22, above the ceiling).
    run_at, calls = fake_server(40.0, lambda r: 0.006, sustains=30.0, ceiling=30.0)
    sat = curves.saturation(run_at, 400, overload_prompts=400)
    assert sat.degraded and sat.api_server_rate == 30.0
    assert sat.rate == 30.0 and sat.searched == [(30.0, True, pytest.approx(0.0, abs=1e-9))]
    assert curves.keeps_up(run_at(30.2, curves.SUSTAIN_REQUESTS))[0]  # (what the long runs alone would pass)
    # Where the engine binds first (at 28), the search brackets and bisects below the ceiling.
    run_at, _ = fake_server(40.0, lambda r: 0.006, sustains=28.0, ceiling=30.0)
    sat = curves.saturation(run_at, 400, overload_prompts=400)
    assert 28.0 <= sat.rate < 28.0 * (1 + curves.SUSTAIN_SLOPE) and sat.above < 30.0
    assert max(r for r, _, _ in sat.searched) <= 30.0


def test_the_plan_never_tries_a_rate_above_what_the_api_server_sustains(monkeypatch):
    # The plan skips the long search, so a full queue that serves less than the burst (degraded)
    # or thrashes gives only a lower bound, and the sweep goes on past it: as far as the API
    # server's ceiling, as `curves.saturation`'s search (the test above), never beyond. Here the
    # API server sustains 30 req/s and binds (a full queue serves 30, the burst 40): runs past 30
    # climb (rate / 30 - 1) s a second, within BACKLOG_SLOPE up to 31.5, so the sweep once went on
    # to 33 and the bisection settled at 31.3, above the ceiling. It stops at the ceiling, which
    # meets the SLO: the answer, limited by throughput.
    small_windows(monkeypatch, 10)
    run_at, _ = fake_server(40.0, lambda r: 0.006, sustains=30.0, ceiling=30.0)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=20.0), num_prompts=400)
    assert max(p.rate for p in plan.points) == 30.0 == plan.best.rate == plan.bracket_high
    assert plan.saturation.degraded and plan.cap is None and plan.ceiling == 30.0
    assert plan.limited_by == "throughput" and "API server's ceiling" in plan.first_miss.misses[-1]
    from batchtui.cli import cmd_plan
    said = cmd_plan.limit_text(plan)
    assert "the most the API server sustains (30.00 req/s" in said and "--api-server-count" in said
    # A thrashing full queue (30) below an engine that sustains 40 behind an API server that
    # sustains 36: the sweep stops at 36 (it once bisected up to 39.9).
    run_at, _ = fake_server(34.0, lambda r: 0.006, sustains=40.0, thrash=30.0, ceiling=36.0)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=20.0), num_prompts=400)
    assert plan.saturation.thrashes and plan.cap is None
    assert max(p.rate for p in plan.points) == 36.0 == plan.best.rate
    # Where the SLO binds first, the ceiling changes nothing (TPOT 24 ms at 36 req/s, ceiling 38).
    run_at, _ = fake_server(34.0, lambda r: 0.006 + 0.0005 * r, sustains=40.0, thrash=30.0, ceiling=38.0)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=24.0), num_prompts=400)
    assert plan.limited_by == "slo" and plan.best.rate <= 36.0 < plan.bracket_high <= 38.0


def test_a_deep_queue_serving_less_than_a_shallower_one_leaves_the_rate_to_the_long_runs():
    # The burst completes 30 req/s; offered 37.5 the replica serves 36, too near the offer, so the
    # overload is offered twice as much, 75: a queue that deep serves only 32 (waves). The two
    # full queues disagree (`Saturation.lockstep`): the rate is searched and finds what a stream
    # sustains, 36; without the search it is 32, a lower bound.
    run_at, calls = fake_server(30.0, lambda r: 0.006, sustains=36.0, waves=32.0)
    sat = curves.saturation(run_at, 400, overload_prompts=400)
    assert [r for r, _ in calls[1:3]] == [37.5, 75.0] and sat.full_queue_rate == 32.0
    assert sat.lockstep and not (sat.thrashes or sat.degraded) and sat.searched
    assert 36.0 / (1 + curves.SUSTAIN_PRECISION) <= sat.rate < 36.0 * (1 + curves.SUSTAIN_SLOPE) < sat.above
    quick = curves.saturation(run_at, 400, overload_prompts=400, search=False)
    assert quick.lockstep and not quick.exact and quick.rate == 32.0
    # Both full queues agreeing (the deep one serves 36 too): one overloaded rate, no search.
    run_at, _ = fake_server(30.0, lambda r: 0.006, sustains=36.0)
    sat = curves.saturation(run_at, 400, overload_prompts=400)
    assert not sat.lockstep and not sat.searched and sat.exact and sat.rate == pytest.approx(36.0)
    # A first offer that kept up (38 sustained) completes its offer, not a full queue's rate: the
    # deep queue's 32 is not set against it.
    run_at, _ = fake_server(30.0, lambda r: 0.006, sustains=38.0, waves=32.0)
    sat = curves.saturation(run_at, 400, overload_prompts=400)
    assert not sat.lockstep and not sat.searched and sat.rate == pytest.approx(32.0)


def test_a_full_queue_that_preempts_leaves_the_answer_to_the_runs(monkeypatch):
    # A full queue thrashes the KV cache: its rate (30) is only a lower bound on what a stream
    # sustains (40), so the coarse sweep goes on past it and each point is judged on its own run.
    small_windows(monkeypatch, 10)
    run_at, _ = fake_server(34.0, lambda r: 0.006 + 0.0005 * r, sustains=40.0, thrash=30.0)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=24.0), num_prompts=400)  # TPOT 24 ms at 36 req/s
    assert plan.saturation.thrashes and not plan.saturation.exact and plan.cap is None
    assert plan.best.rate > plan.saturated_rate and plan.limited_by == "slo"
    assert plan.best.rate <= 36.0 < plan.bracket_high


def test_a_window_too_short_to_judge_is_a_miss_and_a_warning(monkeypatch):
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW", 10)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW_S", 1e6)  # never reached within the longest run
    run_at, _ = fake_server(40.0, lambda r: 0.006)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=20.0), num_prompts=200)
    assert plan.warnings and "too short to judge" in plan.points[0].misses[-1]


def test_confirm_steps_down_until_a_long_run_meets_the_slo(monkeypatch):
    small_windows(monkeypatch, 10)
    run_at, calls = fake_server(40.0, lambda r: 0.006 + 0.0005 * r)  # TPOT 20 ms at 28 req/s
    slo = Slo(tpot_p99_ms=20.0)

    def evaluate(rate):
        return [rate_plan.confirm_point(run_at, slo, rate, 40.0, num_prompts=300, min_window=10, min_window_s=0.0)]

    tried = rate_plan.confirm_rate(evaluate, 29.5, 0.5)
    # 29.5 and 29.0 miss, 28.0 meets; then one bisection: 28.5 misses (TPOT 20.25 ms)
    assert [rate for rate, _ in tried] == [29.5, 29.0, 28.0, 28.5]
    assert [points[0].ok for _, points in tried] == [False, False, True, False]
    assert all(n >= 300 for _, n in calls)


def test_a_rate_no_run_vouches_for_is_stepped_down_to_zero_and_never_run_at_or_below_it():
    """Steps that pass 0 end the descent; the bisection after it stays above 0 (it once ran a
    rate of -9e-16, which the engine refuses)."""
    tried = rate_plan.confirm_rate(lambda rate: [SimpleNamespace(misses=["p99 TPOT"])], 0.05, 0.01)
    rates = [rate for rate, _ in tried]
    # 0.05, 0.04, 0.02, then -0.02 is not run; the bisection between it and 0.02 fell on ~0
    assert rates[:3] == pytest.approx([0.05, 0.04, 0.02]) and all(r > 0 for r in rates), rates


def test_a_flat_curve_is_followed_down_until_a_rate_holds():
    """Short runs can put a flat curve's rate far above what long runs vouch for (EAGLE-3 at a low
    peak: p99 TPOT within a millisecond from 2 to 24 req/s). The descent goes on, its step doubling,
    until a rate holds: here 33 req/s stepped by 0.25 holds only at 2 req/s or below, which six
    tries (33 down to 17.25) never reached, calling the deployment infeasible at every rate."""
    tried = rate_plan.confirm_rate(lambda rate: [SimpleNamespace(misses=[] if rate <= 2.0 else ["p99 TPOT"])],
                                   33.0, 0.25)
    rates = [rate for rate, _ in tried]
    assert rates[:8] == pytest.approx([33.0, 32.75, 32.25, 31.25, 29.25, 25.25, 17.25, 1.25]), rates
    # then two bisections toward 17.25, 9.25 and 5.25, which miss: the answer is 1.25
    assert rates[8:] == pytest.approx([9.25, 5.25]), rates
    assert [rate for rate, points in tried if not points[0].misses] == [1.25]


def test_a_router_spreads_the_peak_and_keeps_true_arrival_times():
    from sim.engine import Engine
    from sim.scenario import Scenario
    from sim.workload import RequestSpec, WorkloadSpec

    idle = Scenario(workload=WorkloadSpec(arrival="all-at-once", num_prompts=0))
    specs = [RequestSpec(str(i), i * 0.01, 256, 64 if i % 4 else 512) for i in range(200)]
    rr = [Engine(idle, keep_requests=False, api_server=True) for _ in range(3)]
    rate_plan.route(specs, rr, "round-robin")
    assert [e.metrics.completed for e in rr] == [67, 67, 66]
    lor = [Engine(idle, keep_requests=False, api_server=True) for _ in range(3)]
    arrivals = rate_plan.route(specs, lor, "least-outstanding-requests")
    assert sum(e.metrics.completed for e in lor) == 200 and arrivals["17"] == pytest.approx(0.17)
    # The long answers (every fourth) pile up under round-robin on one replica; least
    # outstanding requests sends work around them.
    assert max(e.metrics.completed for e in lor) - min(e.metrics.completed for e in lor) > 1
    for e in lor:
        cols = rate_plan.router_columns(e, arrivals)
        assert (cols["ttft"] > 0).all() and (cols["e2e"] >= cols["ttft"]).all()


@given(st.integers(2, 4), st.lists(st.tuples(st.floats(0.0, 0.04), st.integers(16, 1024), st.integers(1, 48)),
                                  min_size=10, max_size=40))
def test_least_outstanding_requests_picks_a_replica_holding_the_fewest(replicas, draws):
    """Each request goes to a replica with the fewest requests sent to it and not finished at its
    arrival (the lowest index among the tied), counts read again after the run from every
    replica's finished requests: a router counting stale (not yet advanced to the arrival, or
    requests arriving together all seeing the counts before the first was sent) herds requests
    onto one replica, and this fails."""
    from sim.engine import Engine
    from sim.scenario import Scenario
    from sim.workload import RequestSpec, WorkloadSpec

    idle = Scenario(workload=WorkloadSpec(arrival="all-at-once", num_prompts=0))
    specs, t = [], 0.0
    for i, (gap, prompt, output) in enumerate(draws):
        t += gap  # (a gap of 0: requests arriving together)
        specs.append(RequestSpec(str(i), t, prompt, output))
    engines = [Engine(idle, keep_requests=False, api_server=True) for _ in range(replicas)]
    arrivals = rate_plan.route(specs, engines, "least-outstanding-requests")
    where, finish = {}, {}
    for r, engine in enumerate(engines):
        for rec in engine.metrics.records:
            where[rec.request_id], finish[rec.request_id] = r, rec.arrival_time + rec.e2e
    assert len(where) == len(specs)
    for i, spec in enumerate(specs):
        at = arrivals[spec.request_id]
        held = [0] * replicas
        for earlier in specs[:i]:
            if finish[earlier.request_id] > at:
                held[where[earlier.request_id]] += 1
        assert where[spec.request_id] == held.index(min(held)), (i, held)


def test_a_request_behind_a_prefill_is_one_that_came_before_an_earlier_first_token():
    cols = curves.Columns({"arrival_time": np.array([0.0, 0.05, 0.12, 0.5]), "ttft": np.array([0.2, 0.01, 0.1, 0.1]),
                           "e2e": np.ones(4), "tpot": np.zeros(4), "output_len": np.ones(4)})
    # the second came at 0.05, before the first's token at 0.2; so did the third (0.12), though
    # the second had its token at 0.06; the fourth came after them all
    assert rate_plan.behind_a_prefill(cols) == 2
    assert rate_plan.behind_a_prefill(cols.where(np.array([True, False, False, True]))) == 0


def test_steady_window_drops_warm_up_and_cool_down():
    recs = [Rec(float(t), 0.01, 0.005, 2.0) for t in range(11)]
    window, warmup = curves.steady_window(recs)
    assert warmup == 2.0
    assert window["arrival_time"].tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


def test_replicas_and_kv_fit():
    assert replicas_needed(100, 30.0, 0.20) == 5  # 100 / (0.8 x 30) = 4.17
    assert replicas_needed(150, 24.0) == 8  # the default headroom: 150 / 19.2 = 7.8
    assert replicas_needed(90, 30.0, 0.0) == 3  # exactly 3, not 4
    assert replicas_needed(96, 30.0, 0.2) == 4  # 96 / 24: exactly 4
    assert replicas_needed(1, 100, 0.3) == 1
    with pytest.raises(ValueError, match="headroom"):
        replicas_needed(100, 30.0, 1.0)
    # 512 in / 256 out peaks at 767 tokens = 48 blocks of 16
    assert kv_fit_seats(28_008, 16, [(512, 256)] * 10, 131072) == 583
    assert kv_fit_seats(100, 16, [(100, 10)], 64) == 25  # capped by max_model_len: 63 tokens


def test_an_offline_plan_runs_the_kv_fit_batch_and_vllm_s_default():
    lengths = [(512, 256)] * 300  # 48 blocks each at the peak
    plan = planning.offline_plan(lengths, 4800, 16, 4096, default_seats=1024)
    assert (plan.kv_fit, plan.peak_blocks) == (100, 48.0)
    assert plan.candidates == (("fits the KV cache", 100), ("vLLM default", 1024))
    # Fewer requests than the cache holds: the KV-fit batch is all of them, and vLLM's default
    # seats run them alike, so one run.
    few = planning.offline_plan(lengths[:60], 4800, 16, 4096, default_seats=1024)
    assert few.kv_fit == 60 and few.candidates == (("fits the KV cache", 60),)
    assert planning.offline_plan(lengths, 4800, 16, 4096, 1024, seats=7).candidates == (("as given", 7),)
    assert planning.offline_engine(100, 16384) == {"max_num_seqs": 100}
    assert planning.offline_engine(1024, 512) == {"max_num_seqs": 1024, "max_num_batched_tokens": 1024}
    assert planning.offline_engine(1024, 512, budget_given=True) == {"max_num_seqs": 1024}
    assert planning.quickest([(100, 9.5), (1024, 8.0)]) == 1
    assert planning.quickest([(1024, 8.0), (100, 8.0)]) == 1  # a tie: fewer seats


def test_the_kv_fit_batch_is_the_largest_that_never_preempts():
    """The plan's KV-fit batch against the engine: with that many seats no request is preempted,
    with one more the cache runs out before the batch's answers end."""
    from sim.engine import Engine
    from sim.scenario import Scenario
    from sim.workload import LengthSpec, WorkloadSpec

    job = Scenario(offline=True, num_gpu_blocks_override=101,
                   workload=WorkloadSpec(arrival="all-at-once", num_prompts=40, input=LengthSpec(mean=64),
                                         output=LengthSpec(mean=32))).with_engine(max_model_len=1024)
    d, cfg = job.deployment(), job.engine_config()
    plan = planning.offline_plan([(64, 32)] * 40, d.usable_blocks, d.block_size, cfg.max_model_len,
                                 cfg.max_num_seqs)
    assert plan.kv_fit == 16  # 100 blocks / 6 (95 tokens at the peak)
    preempted = {seats: Engine(job.with_engine(**planning.offline_engine(seats, cfg.max_num_batched_tokens)))
                 .run().metrics["num_preemptions"] for seats in (plan.kv_fit, plan.kv_fit + 1)}
    assert preempted[plan.kv_fit] == 0 and preempted[plan.kv_fit + 1] > 0


# -- the chart ---------------------------------------------------------------------------------


def test_scatter_marks_points_and_the_knee():
    lines = scatter([(100, 20), (200, 22), (400, 30), (420, 4000)], highlight=2,
                    y_label="TTFT p99", x_label="req/s", width=40, height=10)
    body = "\n".join(lines)
    assert lines[0] == "TTFT p99"
    assert body.count(KNEE) == 1 and body.count(POINT) == 3
    assert "+" + "-" * 40 in body
    assert "100" in body or "1.0k" in body  # a round latency tick on the log axis
    assert all(len(line) <= 60 for line in lines)


def test_scatter_skips_what_it_cannot_draw():
    assert scatter([(math.inf, 1.0), (1.0, 0.0)]) == ["(nothing to chart)"]
    lines = scatter([(10, 5), (20, 5)])  # a flat curve still draws
    assert "\n".join(lines).count(POINT) == 2


# -- step 16 and `batchtui plan` plan alike ----------------------------------------------------


@pytest.mark.heavy
def test_step_16_and_batchtui_plan_count_the_same_replicas():
    """Step 16's drill and `batchtui plan --peak-rate` (with its default headroom) turn the same
    SLO rate into the same replicas, on step 16's own curve."""
    from batchtui.cli import cmd_plan
    from batchtui.cli.parser import build_parser
    from steps import activities
    from tests import shared_steps

    step = shared_steps.by_number()[16]
    drill = activities.build(step)
    slo = step.sweep
    for seed in range(4):
        q = drill.new_question(seed)
        peak, rate = q.facts["peak"], q.facts["slo_rate"]
        args = build_parser("plan").parse_args(["plan", "--ttft-p99", f"{slo.slo_ttft_p99_ms:g}",
                                          "--tpot-p99", f"{slo.slo_tpot_p99_ms:g}", "--peak-rate", f"{peak:g}"])
        assert cmd_plan.first_replicas(args, rate) == q.answer, (peak, rate)
    # The example: a peak of 150 req/s and an SLO rate of 24 (once 8 in the lesson, 9 in plan).
    args = build_parser("plan").parse_args(["plan", "--ttft-p99", "500", "--peak-rate", "150"])
    assert cmd_plan.first_replicas(args, 24.0) == 8
    assert args.headroom == planning.HEADROOM


# -- an answer holds for seeds not yet tried ---------------------------------------------------------

def _confirmations(p99_tpots, slo):
    return [rate_plan.PlanPoint(26.6, None, {"p99_tpot_ms": v, "p99_ttft_ms": 140.0},
                                slo.misses({"p99_tpot_ms": v, "p99_ttft_ms": 140.0}), "confirm") for v in p99_tpots]


def test_an_answer_holds_when_a_seed_not_yet_tried_is_predicted_to_meet_the_slo():
    """p99 TPOT of 20,000-request confirmation runs on ten seeds (plan for lognormal chat
    lengths, 512/256 medians, on an H100): at 26.60 req/s all ten meet 25 ms, but their spread
    puts a new seed above it more often than one time in a hundred (at 26.66 one of twenty new
    seeds measured 25.46 ms). The bound is a Gumbel sample's (`confirmation.prediction_factor`,
    4.34 standard deviations over ten runs): at 26.41, which a bound for normal spread (Student's
    t, 2.96) vouched for, a new seed is predicted at 25.85 ms; the same spread 1 ms lower holds."""
    slo = Slo(200, 25.0)
    at_26_60 = _confirmations([22.27, 23.02, 23.1, 22.16, 22.86, 23.08, 21.87, 21.7, 23.5, 24.73], slo)
    at_26_41 = [21.84, 22.57, 22.6, 21.69, 22.45, 22.57, 21.43, 21.33, 22.95, 24.01]
    assert all(p.ok for p in at_26_60)
    bound = rate_plan.predicted_p99s(at_26_60, slo)["p99_tpot_ms"]
    values = [p.window["p99_tpot_ms"] for p in at_26_60]
    mean, sd = sum(values) / 10, statistics.stdev(values)
    assert bound == pytest.approx(mean + 4.34 * sd, rel=1e-3)
    assert rate_plan.holds(at_26_60, slo) == [f"a new seed's p99 (99% bound) TPOT {bound:.2f} ms > 25 ms"]
    assert rate_plan.holds(_confirmations(at_26_41, slo), slo) == ["a new seed's p99 (99% bound) TPOT 25.85 ms > 25 ms"]
    assert rate_plan.holds(_confirmations([v - 1.0 for v in at_26_41], slo), slo) == []
    # a run that misses outright is the reason, whatever the bound
    missed = _confirmations([22.0] * 9 + [25.2], slo)
    assert rate_plan.holds(missed, slo) == ["p99 TPOT 25.20 ms > 25 ms"]


def test_confirmation_steps_down_until_the_runs_vouch_for_the_rate():
    """The runs of lognormal chat lengths above against an SLO of 25.5 ms (25 ms, the one they ran
    for, no rate here meets with a new seed's bound a Gumbel's)."""
    slo = Slo(tpot_p99_ms=25.5)
    by_rate = {26.8: [22.75, 23.52, 23.63, 22.64, 23.23, 23.59, 22.35, 22.16, 24.01, 25.18],
               26.6: [22.27, 23.02, 23.1, 22.16, 22.86, 23.08, 21.87, 21.7, 23.5, 24.73],
               26.2: [21.41, 22.19, 22.17, 21.28, 22.15, 22.01, 21.03, 20.91, 22.5, 23.59],
               26.4: [21.84, 22.57, 22.6, 21.69, 22.45, 22.57, 21.43, 21.33, 22.95, 24.01]}
    tried = rate_plan.confirm_rate(lambda rate: _confirmations(by_rate[round(rate, 1)], slo), 26.8, 0.2,
                                   holds=lambda points: rate_plan.holds(points, slo))
    # 26.8 and 26.6 meet on all ten but not for a new one, 26.2 holds (halfway back, 26.4, is
    # finer than the step)
    assert [round(rate, 1) for rate, _ in tried] == [26.8, 26.6, 26.2]
    plan = rate_plan.SeededPlan([rate_plan.RatePlan(slo, None)], [0], list(range(10)), tried)
    assert plan.confirmed and plan.rate == pytest.approx(26.2)
    assert plan.predicted["p99_tpot_ms"] <= 25.5


def test_confirmation_runs_in_batches_stop_at_a_miss_with_the_same_answer():
    """seeded_plan's `batch`: a rate's runs are made a batch at a time and stop after a batch
    with a miss (the rate fails whatever the other seeds show); the rates tried, the answer, its
    runs and the first miss of each failing rate are those of every run made."""
    from sim.scenario import Scenario

    slo = Slo(tpot_p99_ms=25.5)  # (as above)
    # p99 TPOT by seed at each rate: 26.8 and 26.6 miss (on seeds 3 and 9), 26.2 holds.
    by_rate = {26.8: [22.75, 23.52, 23.63, 25.64, 23.23, 23.59, 22.35, 22.16, 24.01, 25.18],
               26.6: [22.27, 23.02, 23.1, 22.16, 22.86, 23.08, 21.87, 21.7, 23.5, 25.73],
               26.2: [21.41, 22.19, 22.17, 21.28, 22.15, 22.01, 21.03, 20.91, 22.5, 23.59],
               26.4: [21.84, 22.57, 22.6, 21.69, 22.45, 22.57, 21.43, 21.33, 22.95, 24.01]}

    def plan_seeds(scenarios):
        out = []
        for _ in scenarios:
            plan = rate_plan.RatePlan(slo, None, saturated_rate=30.0)
            plan.best = rate_plan.PlanPoint(26.8, None, {}, [], "bisect")
            plan.precision = 0.2
            out.append(plan)
        return out

    def run(batch):
        made = []

        def confirm_seeds(scenarios, rate, saturated):
            made.append(len(scenarios))
            values = by_rate[round(rate, 1)]
            return [rate_plan.PlanPoint(rate, None, {"p99_tpot_ms": values[x.seed]},
                                        slo.misses({"p99_tpot_ms": values[x.seed]}), "confirm") for x in scenarios]

        result = rate_plan.seeded_plan(Scenario(seed=0), 1, plan_seeds, confirm_seeds, new_seeds=9, batch=batch)
        return result, sum(made)

    every, runs_all = run(None)
    assert [round(r, 1) for r, _ in every.confirm_tries] == [26.8, 26.6, 26.2] and runs_all == 30
    for batch in (1, 2, 3, 10):
        lazy, runs = run(batch)
        assert lazy.rate == every.rate and lazy.predicted == every.predicted
        assert [r for r, _ in lazy.confirm_tries] == [r for r, _ in every.confirm_tries]
        assert lazy.confirm_points == every.confirm_points
        for (_, mine), (_, full) in zip(lazy.confirm_tries, every.confirm_tries):
            assert lazy.holds(mine) == every.holds(full)
        assert runs < runs_all or batch == 10
    assert run(1)[1] == 4 + 10 + 10  # 26.8 stops at seed 3; 26.6 needs all ten to see seed 9 miss


# -- what the sweep and the plan say of a full queue's rate --------------------------------------


def _saturation(rate: float, full_queue: float, *, thrashes: bool, ceiling: float = math.inf,
                searched=(), burst: float = 40.0, exact: bool = True, lockstep: bool = False) -> curves.Saturation:
    backlog = FakeSummary({"request_throughput": burst, "completed": 1000}, [])
    overload = FakeSummary({"request_throughput": full_queue, "completed": 5000}, [])
    return curves.Saturation(rate, backlog, overload, full_queue, thrashes, searched=list(searched), exact=exact,
                             degraded=not thrashes and full_queue < burst, api_server_rate=ceiling,
                             lockstep=lockstep)


def test_the_sweep_says_serves_only_where_the_full_queue_is_below_the_saturated_rate():
    """A thrashing full queue below the searched rate: lighter traffic sustains more, and a burst above
    the full queue's rate does not drain. Above it (here the API server's doing: the full queue
    completes 45.5, the search's runs at 43.4 fall behind and 42.5 keep up), the full queue
    completes more than the replica sustains, for a while: "serves only" would be false."""
    from batchtui.cli.cmd_sweep import saturation_text

    below = saturation_text(_saturation(37.46, 35.59, thrashes=True, burst=35.32,
                                        searched=[(35.59, True, 0.0), (37.73, False, 0.02)]), 2000)
    assert "37.46 req/s, the highest rate whose run of 20,000 requests keeps up (37.73 falls behind)" in below
    assert "serves only 35.59 req/s" in below and "a burst that fills the queue does not drain" in below
    above = saturation_text(_saturation(42.45, 45.51, thrashes=True, ceiling=43.39, burst=44.0,
                                        searched=[(43.39, False, 0.02), (40.93, True, 0.0), (42.45, True, 0.003)]), 1000)
    assert "only" not in above.replace("only for a while", "") and "does not drain" not in above
    assert "completes 45.51 req/s over 5,000 requests (1,000 queued at once: 44.00), more than it sustains" in above
    assert "takes requests in ahead of the tokens it streams" in above
    # Thrashing, the engine's doing: the rate above it that fell behind says so.
    engine = saturation_text(_saturation(30.0, 31.0, thrashes=True, burst=30.5,
                                         searched=[(31.0, False, 0.02), (29.2, True, 0.0), (30.0, True, 0.0)]), 1000)
    assert "more than it sustains; a run of 20,000 at 31.00 falls behind" in engine
    # Degraded (less than the burst), below and above the searched rate.
    below = saturation_text(_saturation(33.0, 30.0, thrashes=False, searched=[(30.0, True, 0.0)]), 1000)
    assert "serves only 30.00 req/s, less than 1,000 requests queued at once complete (40.00)" in below
    above = saturation_text(_saturation(28.0, 30.0, thrashes=False,
                                        searched=[(30.0, False, 0.02), (28.0, True, 0.0)]), 1000)
    assert "serves only" not in above
    assert "completes 30.00 req/s over 5,000 requests, less than 1,000 queued at once (40.00) yet more than it " \
           "sustains; a run of 20,000 at 30.00 falls behind" in above
    # Stopped at the API server's ceiling: what binds is said.
    capped = saturation_text(_saturation(30.0, 29.0, thrashes=False, ceiling=30.0, searched=[(29.0, True, 0.0),
                                                                                             (30.0, True, 0.009)]), 1000)
    assert capped.startswith("Saturated rate: 30.00 req/s, what the API server sustains")
    # A deep queue serving less than a shallower one (waves): neither the burst nor the API server.
    waves = saturation_text(_saturation(391.0, 358.27, thrashes=False, burst=329.73, lockstep=True,
                                        searched=[(358.27, True, 0.0), (402.56, False, 0.04), (391.0, True, 0.0)]), 1000)
    assert waves.startswith("Saturated rate: 391.00 req/s, the highest rate whose run of 20,000 requests keeps up")
    assert "serves only 358.27 req/s, less than a shallower queue completes" in waves and "waves" in waves
    assert "API server" not in waves and "queued at once" not in waves


def test_the_plan_says_what_a_full_queue_that_is_only_a_guide_means_beside_its_answer():
    from batchtui.cli.cmd_plan import saturation_text

    def result(sat, answer):
        plan = SimpleNamespace(saturation=sat)
        return SimpleNamespace(plans=[plan], cap=None, feasible=answer is not None, rate=answer)

    thrash = _saturation(34.55, 34.55, thrashes=True, exact=False, burst=34.0)
    below = saturation_text(result(thrash, 29.03))
    assert "preempts" in below and "may be more or less than that" in below and "does not drain" not in below
    assert "lighter traffic can sustain more" not in below
    above = saturation_text(result(thrash, 36.0))
    assert "The answer is above it: at that rate a burst that fills the queue does not drain" in above
    assert "does not drain" not in saturation_text(result(thrash, None))
    degraded = saturation_text(result(_saturation(30.0, 30.0, thrashes=False, exact=False), 31.0))
    assert "preempts" not in degraded and "less than the requests queued at once complete (40.00)" in degraded
    assert "--api-server-count" in degraded
    waves = saturation_text(result(_saturation(358.27, 358.27, thrashes=False, burst=329.73, exact=False,
                                               lockstep=True), 370.0))
    assert "With a deep queue a replica serves 358.27 req/s (lowest of the seeds), less than a shallower" in waves
    assert "waves" in waves and "API server" not in waves and "may be more or less than that" in waves


def test_an_offline_plan_counts_a_sliding_window_layouts_blocks_as_the_engine_does():
    """gpt-oss-120b on an H100 (a window group of up to 9 blocks beside the full group): the
    KV-fit batch holds what the engine's pool counts at each request's peak, not one block per
    16 tokens alone (which made 84 seats of 2,048 + 1,024 tokens "fit" where 81 do)."""
    from sim.kv import BlockPool
    from sim.profiles import load_profiles
    from sim.request import peak_tokens
    from sim.scenario import Scenario

    profiles = load_profiles()
    scenario = Scenario(model="gpt-oss-120b", gpu="h100-sxm")
    deployment, config = scenario.deployment(profiles), scenario.engine_config(profiles)
    layout = deployment.kv_layout
    assert layout.window_groups
    pool = BlockPool(deployment.usable_blocks + 1, deployment.block_size, layout=layout)
    lengths = [(2048, 1024)] * 100
    plan = planning.offline_plan(lengths, deployment.usable_blocks, deployment.block_size, config.max_model_len,
                                 config.max_num_seqs, None, layout.window_groups, layout.window_blocks)
    peak = pool.blocks_for(peak_tokens(2048, 1024, config.max_model_len))
    assert plan.peak_blocks == peak
    assert plan.kv_fit == deployment.usable_blocks // peak == 81


@pytest.mark.parametrize("prompt, output, max_model_len", [(100, 10, 4096), (50, 30, 64), (63, 1, 64), (17, 1, 4096)])
def test_the_peak_a_plan_sizes_is_the_one_the_engine_refuses_by(prompt, output, max_model_len):
    """check_request refuses a request one block short of its peak and takes it at its peak:
    the peak `mean_peak_blocks` counts."""
    from types import SimpleNamespace

    from sim.errors import RequestRejected
    from sim.kv import BlockPool
    from sim.request import check_request

    blocks = planning.mean_peak_blocks(16, [(prompt, output)], max_model_len)
    config = SimpleNamespace(max_model_len=max_model_len)
    check_request("r", prompt, output, config, BlockPool(int(blocks) + 1, 16))
    with pytest.raises(RequestRejected):
        check_request("r", prompt, output, config, BlockPool(int(blocks), 16))
