"""The arithmetic behind `sweep` and `plan` on made-up curves: where the knee is, how the SLO
search brackets and bisects, replicas, the KV-fit batch size, and the ASCII chart."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from batchtui import planning
from sim import curves
from batchtui.asciichart import KNEE, POINT, scatter
from batchtui.planning import Slo, find_knee, kv_fit_seats, plan_rate, replicas_needed

# -- the knee ----------------------------------------------------------------------------------


def test_knee_is_the_last_point_before_ttft_grows_k_fold():
    rates = [1, 2, 4, 8, 16]
    tput = [100, 200, 400, 800, 1500]
    ttft = [20, 22, 30, 61, 500]
    assert planning.KNEE_LATENCY_FACTOR == 4.0
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


def fake_server(capacity: float, tpot_at, sustains: float = math.inf):
    """A replica whose TPOT (s) depends only on the rate. Below `sustains` req/s every request
    takes 1 s end to end; above it the backlog grows and so does E2E (and TTFT with it)."""
    calls = []

    def run_at(rate: float, n: int):
        calls.append((rate, n))
        if math.isinf(rate):
            recs = [Rec(0.0, 0.05, tpot_at(capacity), 1.0) for _ in range(n)]
            return FakeSummary({"request_throughput": capacity, "p99_ttft_ms": 50.0,
                                "p99_tpot_ms": tpot_at(capacity) * 1000}, recs)
        behind = max(0.0, 1 - sustains / rate)  # the share of arrivals that piles up
        recs = [Rec(i / rate, 0.02 + behind * i / rate, tpot_at(rate), 1.0 + behind * i / rate)
                for i in range(n)]
        return FakeSummary({"request_throughput": min(rate, sustains), "p99_ttft_ms": 20.0,
                            "p99_tpot_ms": tpot_at(rate) * 1000}, recs)

    return run_at, calls


def test_plan_brackets_then_bisects_to_the_stated_precision(monkeypatch):
    monkeypatch.setattr(planning, "STEADY_MIN_REQUESTS", 10)
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
    monkeypatch.setattr(planning, "STEADY_MIN_REQUESTS", 10)
    run_at, _ = fake_server(40.0, lambda r: 0.006 + 0.0005 * r)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=5.0), num_prompts=200)
    assert not plan.feasible
    assert [p.stage for p in plan.points] == ["coarse", "floor"]
    assert plan.closest.stage == "floor"  # the near-idle point misses by least


def test_plan_grows_a_run_whose_steady_window_is_too_short(monkeypatch):
    monkeypatch.setattr(planning, "STEADY_MIN_REQUESTS", 100)
    run_at, calls = fake_server(40.0, lambda r: 0.006)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=20.0), num_prompts=50)
    assert all(p.window["count"] >= 100 for p in plan.points)
    assert calls[1][1] > 50
    # nothing ever misses: the search stops at the top of its sweep
    assert plan.limited_by == "sweep" and plan.best.rate == pytest.approx(2.0 * 40.0)


def test_plan_stops_where_the_replica_falls_behind(monkeypatch):
    # All-at-once measures 40 req/s, but a steady stream is sustained up to 46 req/s.
    monkeypatch.setattr(planning, "STEADY_MIN_REQUESTS", 10)
    run_at, _ = fake_server(40.0, lambda r: 0.006, sustains=46.0)
    plan = plan_rate(run_at, Slo(tpot_p99_ms=20.0), num_prompts=400)
    assert plan.limited_by == "throughput"
    assert plan.best.rate <= 46.0 * (1 + planning.BACKLOG_SLOPE) < plan.bracket_high
    assert plan.best.rate > 40.0  # past the all-at-once rate
    assert "does not settle" in plan.first_miss.misses[-1]


def test_steady_window_drops_warm_up_and_cool_down():
    recs = [Rec(float(t), 0.01, 0.005, 2.0) for t in range(11)]
    window, warmup = curves.steady_window(recs)
    assert warmup == 2.0
    assert [r.arrival_time for r in window] == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


def test_replicas_and_kv_fit():
    assert replicas_needed(100, 0.30, 30.0) == 5  # 130 / 30 = 4.33
    assert replicas_needed(90, 0.0, 30.0) == 3  # exactly 3, not 4
    assert replicas_needed(1, 0.3, 100) == 1
    # 512 in / 256 out peaks at 767 tokens = 48 blocks of 16
    assert kv_fit_seats(28_008, 16, [(512, 256)] * 10, 131072) == 583
    assert kv_fit_seats(100, 16, [(100, 10)], 64) == 25  # capped by max_model_len: 63 tokens


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
