"""The arithmetic behind `batchtui plan`: the highest request rate that meets a latency SLO, and
the batch an offline job should run. Where a curve bends and how one rate is measured at its
steady state live in `sim.curves` (one definition for the lessons and the command line); running
the simulator is the caller's job (so these can be tested with made-up servers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sim.curves import (BACKLOG_SLOPE, KNEE_LATENCY_FACTOR, STEADY_MIN_REQUESTS, Knee, find_knee,
                        latency_percentiles, measure_rate)

__all__ = ["BACKLOG_SLOPE", "KNEE_LATENCY_FACTOR", "Knee", "PLAN_FRACTIONS", "PLAN_NUM_PROMPTS", "PlanPoint",
           "RatePlan", "STEADY_MIN_REQUESTS", "Slo", "find_knee", "kv_fit_seats", "mean_peak_blocks", "plan_rate",
           "replicas_needed"]

# The plan's search: a coarse sweep at these fractions of the saturated rate (the request
# throughput with every request queued at once), upwards until a point first misses, then
# bisection down to PLAN_PRECISION of the saturated rate. The sweep may pass the saturated rate:
# queueing everything at once over-fills the KV cache and preempts, so a replica fed at a steady
# rate can sustain somewhat more. Above what it sustains, its backlog grows (see BACKLOG_SLOPE).
PLAN_FRACTIONS = tuple(round(0.1 * i, 1) for i in range(1, 21))
PLAN_FLOOR_FRACTION = 0.02  # tried when even 10 % of saturation misses the SLO
PLAN_PRECISION = 0.01
PLAN_NUM_PROMPTS = 3000  # requests a point by default: near saturation shorter runs do not settle


# -- SLO planning -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slo:
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None

    def misses(self, metrics: dict) -> list[str]:
        """What the run missed, in words; empty when it meets the SLO."""
        out = []
        if self.ttft_p99_ms is not None and metrics["p99_ttft_ms"] > self.ttft_p99_ms:
            out.append(f"p99 TTFT {metrics['p99_ttft_ms']:.1f} ms > {self.ttft_p99_ms:g} ms")
        if self.tpot_p99_ms is not None and metrics["p99_tpot_ms"] > self.tpot_p99_ms:
            out.append(f"p99 TPOT {metrics['p99_tpot_ms']:.2f} ms > {self.tpot_p99_ms:g} ms")
        return out

    def excess(self, metrics: dict) -> float:
        """The worst ratio of measured to allowed (≤ 1 when met): ranks near misses."""
        ratios = [1.0]
        if self.ttft_p99_ms:
            ratios.append(metrics["p99_ttft_ms"] / self.ttft_p99_ms)
        if self.tpot_p99_ms:
            ratios.append(metrics["p99_tpot_ms"] / self.tpot_p99_ms)
        return max(ratios)

    def text(self) -> str:
        parts = []
        if self.ttft_p99_ms is not None:
            parts.append(f"p99 TTFT <= {self.ttft_p99_ms:g} ms")
        if self.tpot_p99_ms is not None:
            parts.append(f"p99 TPOT <= {self.tpot_p99_ms:g} ms")
        return " and ".join(parts)


@dataclass
class PlanPoint:
    rate: float
    summary: object  # RunSummary
    window: dict  # latency_percentiles of the steady window (the whole run at rate inf)
    misses: list[str]
    stage: str  # "saturation", "coarse", "floor" or "bisect"

    @property
    def ok(self) -> bool:
        return not self.misses


@dataclass
class RatePlan:
    slo: Slo
    saturated: PlanPoint
    points: list[PlanPoint] = field(default_factory=list)
    best: PlanPoint | None = None
    """The highest rate meeting the SLO; None when no rate does."""
    bracket_high: float | None = None
    """The lowest rate seen to miss the SLO above `best` (None if none missed)."""
    precision: float = 0.0
    """The answer is within this many req/s below the true limit."""
    limited_by: str = ""
    """"slo" (a latency target is missed first), "throughput" (the replica falls behind first,
    within the SLO), or "sweep" (the SLO held up to the top of the search)."""
    first_miss: PlanPoint | None = None
    """The point just above `best` that missed."""

    @property
    def feasible(self) -> bool:
        return self.best is not None

    @property
    def closest(self) -> PlanPoint:
        """When nothing meets the SLO: the point that missed it by least."""
        return min(self.points, key=lambda p: (self.slo.excess(p.window), p.rate))


def plan_rate(run_at: Callable[[float, int], object], slo: Slo, num_prompts: int,
              precision: float = PLAN_PRECISION, min_window: int | None = None) -> RatePlan:
    """The highest request rate whose steady-state latency meets `slo`.

    `run_at(rate, num_prompts)` runs the scenario at that rate (math.inf = all queued at once)
    and returns its RunSummary. The saturated rate (request throughput with everything queued)
    sets the scale of the search; a rate the replica cannot keep up with misses. Each rate is
    measured at its steady state (`sim.curves.measure_rate`), its window at least `min_window`
    requests (default STEADY_MIN_REQUESTS).
    """
    min_window = STEADY_MIN_REQUESTS if min_window is None else min_window
    sat_summary = run_at(math.inf, num_prompts)
    sat_rate = sat_summary.metrics["request_throughput"]
    sat_window = latency_percentiles(sat_summary.records)
    plan = RatePlan(slo, PlanPoint(math.inf, sat_summary, sat_window, slo.misses(sat_window),
                                   "saturation"))
    plan.precision = precision * sat_rate

    last_warmup = [0.0]  # the previous point's warm-up: sizes the next run so it rarely reruns

    def evaluate(rate: float, stage: str) -> PlanPoint:
        point = measure_rate(run_at, rate, num_prompts=num_prompts, min_window=min_window,
                             warmup_hint=last_warmup[0], enough=lambda s: bool(slo.misses(s.metrics)))
        last_warmup[0] = point.extra["warmup"]
        misses = slo.misses(point.window)
        if not point.bounded:
            misses.append(point.note)
        p = PlanPoint(rate, point.summary, point.window, misses, stage)
        plan.points.append(p)
        return p

    lo: PlanPoint | None = None
    hi: PlanPoint | None = None
    for frac in PLAN_FRACTIONS:
        p = evaluate(frac * sat_rate, "coarse")
        if p.ok:
            lo = p
        else:
            hi = p
            break
    if lo is None:
        floor = evaluate(PLAN_FLOOR_FRACTION * sat_rate, "floor")
        if not floor.ok:
            return plan
        lo = floor
    if hi is None:  # met even at the top of the sweep
        plan.best, plan.limited_by = lo, "sweep"
        return plan
    while hi.rate - lo.rate > plan.precision:
        p = evaluate((lo.rate + hi.rate) / 2, "bisect")
        if p.ok:
            lo = p
        else:
            hi = p
    plan.best, plan.bracket_high = lo, hi.rate
    plan.limited_by = "throughput" if hi.misses[-1].startswith("the run does not settle") else "slo"
    plan.precision = hi.rate - lo.rate
    plan.first_miss = hi
    return plan


def replicas_needed(peak_rate: float, headroom: float, rate_per_replica: float) -> int:
    """ceil(peak x (1 + headroom) / rate per replica), at least 1."""
    return max(1, math.ceil(peak_rate * (1 + headroom) / rate_per_replica - 1e-9))


# -- offline planning ---------------------------------------------------------------------------

def mean_peak_blocks(block_size: int, lengths: Sequence[tuple[int, int]], max_model_len: int) -> float:
    """KV blocks a request of these (prompt, output) lengths holds at its peak, on average: the
    last output token is sampled but never written, and max_model_len cuts an answer short."""
    if not lengths:
        return 1.0
    total = 0
    for prompt, output in lengths:
        peak = min(prompt + output - 1, max_model_len - 1)
        total += -(-peak // block_size)
    return total / len(lengths)


def kv_fit_seats(usable_blocks: int, block_size: int, lengths: Sequence[tuple[int, int]],
                 max_model_len: int) -> int:
    """How many such requests the KV cache holds at their peak at once: the largest batch that
    runs without preemption."""
    return max(1, math.floor(usable_blocks / mean_peak_blocks(block_size, lengths, max_model_len)))
