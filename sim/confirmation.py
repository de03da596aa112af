"""Whether the confirmation runs of a rate (one a seed, `sim.rate_plan.seeded_plan`) vouch for it:
every run meets the SLO and a seed not yet tried is predicted to, with a one-sided prediction
bound for runs whose p99s vary between seeds as maxima do (`holds`, `predicted_p99s`,
`prediction_factor`); when the runs not yet made cannot
change a failing verdict (`bound_misses`); and the order a rate's runs are made in, the likeliest
to miss first (`confirm_order`). Standard library only.
"""

from __future__ import annotations

import functools
import math
import random
import statistics
from fractions import Fraction

from sim.planning import Slo

__all__ = ["PLAN_CONFIDENCE", "bound_misses", "confirm_order", "holds", "prediction_factor", "predicted_p99s"]

# An answer holds when every confirmation run meets the SLO and so does the run of a seed not yet
# tried, predicted with this confidence: each p99 the SLO bounds, over the n confirmation runs,
# has mean m and standard deviation s, and the next run's stays below m + k(c, n) x s with
# probability c (a one-sided prediction bound, `prediction_factor`). Near the limit a p99 over
# 20,000 requests differs between seeds by a millisecond or more (lognormal chat lengths: p99
# TPOT 21.3-25.5 ms over 20 seeds at one rate), so passing on ten seeds alone left one seed in
# twenty over the SLO.
PLAN_CONFIDENCE = 0.99

# Over the seeds, a long run's p99 is distributed as a maximum is, not as a normal sample: the
# requests above it come from the run's few worst load excursions (a burst of arrivals, a run of
# long answers), and a new seed may bring a worse one. The p99 TPOT of fifty 20,000-request runs
# (seeds 0-39 and 100-109; an H100 with 256 seats, Llama 3.1 8B, uniform 256-1,792-token prompts,
# lognormal answers of mean 128 with sigma 0.8, 15.68 req/s) has skewness 1.19, where a Gumbel
# (extreme value type I) distribution has 1.14 and a normal 0, and its largest (seed 102, 20.22
# ms) lies 3.55 standard deviations above the mean: 1 in 170 for a Gumbel, 1 in 5,200 for a
# normal. A bound by Student's t (2.96 standard deviations above the mean of ten runs) vouched for
# a rate seed 102 missed. So k is the Gumbel's: a new draw stays below the mean plus k sample
# standard deviations of n draws with probability c. (m - location) / scale and s / scale do not
# depend on the location or the scale, so k depends on c and n alone: it solves
# E[F(m + k s)] = c over GUMBEL_SAMPLES sets of n standard Gumbel draws (F(x) = exp(-exp(-x)), the
# probability given the set, averaged instead of counting hits: 4.34 for ten runs at 99 %,
# within 0.5 % of 200,000 sets' 4.33, which counting hits of a new draw confirms: 99.04 %).
GUMBEL_SAMPLES = 20_000
GUMBEL_SEED = 36


@functools.lru_cache(maxsize=None)
def prediction_factor(confidence: float, n: int) -> float:
    """k of a prediction bound mean + k x sd over n runs (n >= 2) for one run more, the runs
    being draws of one Gumbel distribution (see GUMBEL_SAMPLES): Newton's method on the mean
    probability from a fixed set of samples (the same k on every machine and run)."""
    rng = random.Random(GUMBEL_SEED)
    sets = []
    for _ in range(GUMBEL_SAMPLES):
        xs = [-math.log(-math.log(rng.random() or 5e-324)) for _ in range(n)]
        m = sum(xs) / n
        sets.append((m, math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))))
    k = statistics.NormalDist().inv_cdf(confidence)  # (below the root: Newton climbs to it)
    for _ in range(100):
        covered = slope = 0.0
        for m, sd in sets:
            tail = math.exp(-(m + k * sd))
            f = math.exp(-tail)
            covered += f
            slope += f * tail * sd
        step = (covered - confidence * len(sets)) / slope
        k -= step
        if abs(step) < 1e-12 * k:
            break
    return k


def predicted_p99s(points, slo: Slo, confidence: float = PLAN_CONFIDENCE) -> dict:
    """What a run on a seed not yet tried stays within, with `confidence`, from these runs (one a
    seed): for each p99 the SLO bounds, mean + k x sd over the runs' windows (`prediction_factor`)
    (the largest seen, when fewer than three runs make no spread)."""
    out = {}
    for key, bound in (("p99_ttft_ms", slo.ttft_p99_ms), ("p99_tpot_ms", slo.tpot_p99_ms)):
        if bound is None:
            continue
        values = [p.window[key] for p in points]
        n = len(values)
        if n < 3:
            out[key] = max(values)
            continue
        k = prediction_factor(confidence, n)
        out[key] = max(max(values), statistics.fmean(values) + k * statistics.stdev(values))
    return out


def holds(points, slo: Slo, confidence: float = PLAN_CONFIDENCE, runs: int | None = None) -> list[str]:
    """Why these confirmation runs (one a seed) do not vouch for their rate: a run that misses the
    SLO, or a seed not yet tried predicted to (`predicted_p99s`); empty when they do. `runs`: the
    runs the rate has in all (None: these); fewer points than that, none missing, vouch for
    nothing: the others were not made because a new seed is predicted to miss whatever they
    measure (`bound_misses`)."""
    for p in points:
        if not p.ok:
            return list(p.misses)
    if runs is not None and len(points) < runs:
        return bound_misses(points, slo, runs, confidence) or [f"only {len(points)} of {runs} runs made"]
    predicted = predicted_p99s(points, slo, confidence)
    return [m.replace("p99", f"a new seed's p99 ({confidence:.0%} bound)", 1)
            for m in slo.misses({"p99_ttft_ms": 0.0, "p99_tpot_ms": 0.0, **predicted})]


def bound_misses(points, slo: Slo, runs: int, confidence: float = PLAN_CONFIDENCE) -> list[str]:
    """What a seed not yet tried is predicted to miss (`predicted_p99s` over `runs` runs) whatever
    the runs not yet made measure, these `points` being some of them: for each p99 the SLO bounds,
    mean + k x sd over the runs exceeds the bound for every value the others may take within it
    (a run above it misses outright); empty when some values could still hold."""
    if runs < 3 or len(points) >= runs:
        return []
    k = prediction_factor(confidence, runs)
    out = []
    for key, bound, name in (("p99_ttft_ms", slo.ttft_p99_ms, "TTFT"), ("p99_tpot_ms", slo.tpot_p99_ms, "TPOT")):
        if bound is not None and _always_above([p.window[key] for p in points], runs, k, bound):
            out.append(f"a new seed's p99 ({confidence:.0%} bound) {name} > {bound:g} ms whatever the "
                       f"{runs - len(points)} runs not made measure")
    return out


def _always_above(values: list[float], n: int, k: float, bound: float) -> bool:
    """Whether mean + k x sd of n values, these and n - len(these) others each in [0, bound],
    exceeds `bound` by more than a relative 1e-9 (far beyond the float rounding of
    `predicted_p99s`) whatever the others are, in exact arithmetic. mean + k x sd is convex in the
    others and symmetric in them, so it is least with all of them at one value c; with top the
    bound raised by 1e-9 (above the mean, every value being at most the bound), it exceeds top at
    c when h(c) = k^2 SS(c) / (n - 1) - (top - mean(c))^2 > 0, a quadratic in c, least at an end
    of [0, bound] or at its vertex."""
    f = [Fraction(v) for v in values]
    m, total, squares = n - len(f), sum(f), sum(v * v for v in f)
    k2, top = Fraction(k) ** 2, Fraction(bound) * (1 + Fraction(1, 10 ** 9))

    def h(c: Fraction) -> Fraction:
        s = total + m * c
        return k2 * (squares + m * c * c - s * s / n) / (n - 1) - (top - s / n) ** 2

    h0, h1, h_1 = h(Fraction(0)), h(Fraction(1)), h(Fraction(-1))
    a, b = (h1 + h_1) / 2 - h0, (h1 - h_1) / 2
    ends = [Fraction(0), Fraction(bound)]
    if a > 0 and 0 < -b / (2 * a) < ends[1]:
        ends.append(-b / (2 * a))
    return all(h(c) > 0 for c in ends)


def confirm_order(count: int, last: dict, slo: Slo) -> list[int]:
    """The order a rate's `count` confirmation seeds (by index) are run in: those whose run on the
    last rate that ran them (`last`: index to PlanPoint) missed the SLO, then the others that ran,
    each group by how close it came (`Slo.share`, the highest first); then those not yet run, in
    seed order."""
    ran = sorted(last, key=lambda i: (last[i].ok, -slo.share(last[i].window), i))
    return ran + [i for i in range(count) if i not in last]
