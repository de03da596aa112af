"""The arithmetic behind `batchtui sweep` and `batchtui plan`: where a curve bends, and the
highest request rate that meets a latency SLO. Pure functions over run results; running the
simulator is the caller's job (so these can be tested with made-up curves).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

# The knee of a throughput-latency curve, walking up the sweep: the last point before
#  (a) the latency p99 exceeds KNEE_TTFT_FACTOR times its value at the first (lowest-load) point
#      -- TTFT for a sweep over request rates, TPOT for one over max_num_seqs -- or
#  (b) throughput stops rising: it gains less than KNEE_MIN_GAIN (5 %) over the previous point,
#      or, for closely spaced points, less than a quarter of the relative step in the swept
#      value (a 2 % step in rate must bring at least 0.5 % more throughput).
KNEE_TTFT_FACTOR = 4.0
KNEE_MIN_GAIN = 0.05
KNEE_STEP_SHARE = 0.25

# The plan's search: a coarse sweep at these fractions of the saturated rate (the request
# throughput with every request queued at once), upwards until a point first misses, then
# bisection down to PLAN_PRECISION of the saturated rate. The sweep may pass the saturated rate:
# queueing everything at once over-fills the KV cache and preempts, so a replica fed at a steady
# rate can sustain somewhat more. Above what it sustains, its backlog grows (see BACKLOG_SLOPE).
PLAN_FRACTIONS = tuple(round(0.1 * i, 1) for i in range(1, 21))
PLAN_FLOOR_FRACTION = 0.02  # tried when even 10 % of saturation misses the SLO
PLAN_PRECISION = 0.01
PLAN_NUM_PROMPTS = 3000  # requests a point by default: near saturation shorter runs do not settle

# A replica keeps up when, over the steady window, end-to-end latency does not climb with the
# arrival time: a least-squares slope of E2E against arrival above BACKLOG_SLOPE (seconds of
# latency gained per second of arrivals) means requests finish slower than they arrive -- the
# backlog grows, or the batch is still growing towards a steady state the run never reached.
# Either way the run cannot vouch for that rate.
BACKLOG_SLOPE = 0.05


@dataclass(frozen=True)
class Knee:
    index: int | None
    """The knee point, or None when the curve has not bent within the sweep."""
    reason: str
    """"latency", "throughput", or "" when there is no knee."""
    detail: str = ""
    """What happened at the point after the knee, with the numbers."""

    def explain(self, values: Sequence[float], label: str, factor: float = KNEE_TTFT_FACTOR,
                latency_name: str = "TTFT") -> str:
        if self.index is None:
            return (f"No knee within the sweep: throughput still rises and {latency_name} p99 stays "
                    f"within {factor:g}x its value at the first point up to the last; sweep further.")
        v = values[self.index]
        shown = "inf" if isinstance(v, float) and math.isinf(v) else f"{v:g}"
        return f"Knee at {label} {shown}: {self.detail}."


def _shown(v: float) -> str:
    return "inf" if math.isinf(v) else f"{v:g}"


def find_knee(values: Sequence[float], throughput: Sequence[float], latency_p99: Sequence[float],
              factor: float = KNEE_TTFT_FACTOR, latency_name: str = "TTFT") -> Knee:
    """The knee of a sweep whose `values` (request rates or max_num_seqs) ascend.

    `latency_p99` is TTFT p99 for a sweep over rates and TPOT p99 for one over max_num_seqs (with
    every request queued, more seats shorten the queue; what they cost is time per token)."""
    n = len(values)
    if n < 2:
        return Knee(None, "")
    base = latency_p99[0]
    for j in range(1, n):
        if latency_p99[j] > factor * base:
            return Knee(j - 1, "latency",
                        f"at {_shown(values[j])} {latency_name} p99 is {latency_p99[j]:,.1f} ms, "
                        f"more than {factor:g} x {base:,.1f} ms (its value at the first point)")
        prev, cur = values[j - 1], values[j]
        step = (cur / prev - 1) if math.isfinite(cur) and prev > 0 else math.inf
        need = min(KNEE_MIN_GAIN, KNEE_STEP_SHARE * step)
        if throughput[j] < throughput[j - 1] * (1 + need):
            gain = throughput[j] / throughput[j - 1] - 1 if throughput[j - 1] else 0.0
            return Knee(j - 1, "throughput",
                        f"at {_shown(values[j])} throughput rises only {gain:+.1%} "
                        f"(less than {need:.1%})")
    return Knee(None, "")


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


# Latency percentiles for the plan come from the steady part of each run: requests arriving at
# least one median end-to-end latency after the first arrival and one before the last. A short
# run never fills the batch (the ramp-up and the drain at the end run at a smaller batch than
# the rate sustains), so whole-run percentiles flatter rates near saturation. A run whose
# window holds fewer than STEADY_MIN_REQUESTS is repeated with more requests, up to STEADY_MAX
# (unless the whole run already misses the SLO: then a longer run would miss it too).
STEADY_MIN_REQUESTS = 400
STEADY_MAX_REQUESTS = 20_000


def steady_window(records) -> tuple[list, float]:
    """The records of requests that arrived in the steady part of the run, and the warm-up."""
    if not records:
        return [], 0.0
    arrivals = [r.arrival_time for r in records]
    warmup = float(np.median([r.e2e for r in records]))
    lo, hi = min(arrivals) + warmup, max(arrivals) - warmup
    return [r for r in records if lo <= r.arrival_time <= hi], warmup


def latency_percentiles(records) -> dict:
    """p50 and p99 of TTFT and TPOT over these records, in ms (keys as vllm bench serve's), and
    how fast E2E climbs with arrival time (`e2e_slope`, s per s)."""
    ttft = np.array([r.ttft for r in records]) * 1000.0
    tpot = np.array([r.tpot for r in records if r.tpot is not None]) * 1000.0
    slope = 0.0
    arrivals = np.array([r.arrival_time for r in records])
    if len(records) >= 10 and np.ptp(arrivals) > 0:
        slope = float(np.polyfit(arrivals, [r.e2e for r in records], 1)[0])
    d = {"count": len(records), "e2e_slope": slope,
         "mean_e2e_ms": float(np.mean([r.e2e for r in records])) * 1000.0 if records else 0.0,
         "mean_output_len": float(np.mean([r.output_len for r in records])) if records else 0.0}
    for name, arr in (("ttft", ttft), ("tpot", tpot)):
        d[f"median_{name}_ms"] = float(np.median(arr)) if len(arr) else 0.0
        d[f"p99_{name}_ms"] = float(np.percentile(arr, 99)) if len(arr) else 0.0
    return d


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
              precision: float = PLAN_PRECISION) -> RatePlan:
    """The highest request rate whose steady-state latency meets `slo`.

    `run_at(rate, num_prompts)` runs the scenario at that rate (math.inf = all queued at once)
    and returns its RunSummary. The saturated rate (request throughput with everything queued)
    sets the scale of the search; a rate the replica cannot keep up with misses.
    """
    sat_summary = run_at(math.inf, num_prompts)
    sat_rate = sat_summary.metrics["request_throughput"]
    sat_window = latency_percentiles(sat_summary.records)
    plan = RatePlan(slo, PlanPoint(math.inf, sat_summary, sat_window, slo.misses(sat_window),
                                   "saturation"))
    plan.precision = precision * sat_rate

    last_warmup = [0.0]  # the previous point's warm-up: sizes the next run so it rarely reruns

    def needed(rate: float, warmup: float) -> int:
        # Arrivals must span the warm-up, the cool-down and the window itself.
        return math.ceil(1.2 * (rate * 2 * warmup + STEADY_MIN_REQUESTS))

    def evaluate(rate: float, stage: str) -> PlanPoint:
        n = min(STEADY_MAX_REQUESTS, max(num_prompts, needed(rate, last_warmup[0])))
        while True:
            s = run_at(rate, n)
            window, warmup = steady_window(s.records)
            if len(window) >= STEADY_MIN_REQUESTS or n >= STEADY_MAX_REQUESTS:
                break
            if slo.misses(s.metrics):
                break  # the whole run already misses; its steady part, if longer, would too
            n = min(STEADY_MAX_REQUESTS, max(2 * n, needed(rate, warmup)))
        last_warmup[0] = warmup
        stats = latency_percentiles(window or s.records)
        misses = slo.misses(stats)
        if stats["e2e_slope"] > BACKLOG_SLOPE:
            misses.append(f"the run does not settle (E2E climbs {stats['e2e_slope'] * 1000:.0f} ms "
                          "per second of arrivals)")
        p = PlanPoint(rate, s, stats, misses, stage)
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
