"""The search behind `batchtui plan`: the highest request rate one replica sustains within a
latency SLO, on several seeds and confirmed on longer runs, and the replicas for a peak checked by
simulating the peak behind a router. Where a curve bends and how one rate is measured at its
steady state live in `sim.curves` (one definition for the lessons and the command line); the
SLO, the headroom and the replica count in `sim.planning`; running the simulator is the caller's
job (so these can be tested with made-up servers).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from sim.curves import (BACKLOG_SLOPE, KNEE_LATENCY_FACTOR, STEADY_MIN_REQUESTS, Columns, Knee, Saturation,
                        find_knee, latency_percentiles, measure_rate, saturation, steady_window, within_ceiling)
from sim.confirmation import PLAN_CONFIDENCE, bound_misses, confirm_order, holds, predicted_p99s
from sim.planning import Slo

__all__ = ["BACKLOG_SLOPE", "KNEE_LATENCY_FACTOR", "Knee", "PLAN_CONFIDENCE", "PLAN_FRACTIONS", "PLAN_NUM_PROMPTS",
           "PlanPoint", "RatePlan", "STEADY_MIN_REQUESTS", "find_knee", "plan_rate", "predicted_p99s"]

# The plan's search, per seed: the saturated rate first (`sim.curves.saturation` without its
# long search: the service rate with a full queue); then a coarse sweep at these fractions of
# it, upwards until a point first misses; then bisection down to PLAN_PRECISION of it. No rate
# above the saturated rate is ever an answer: there the queue grows for as long as requests keep
# coming. When the full queue thrashes the KV cache, lighter traffic may sustain more than the
# full queue serves (`curves.saturation`): the coarse sweep then goes on past it
# (PLAN_PAST_FRACTIONS), each point judged on its own run, and the confirmation runs, as long as
# the saturated rate is defined over, say whether the answer keeps up. It goes no higher than the
# API server's ceiling (`Saturation.api_server_rate`), the rule `sim.curves.saturation`'s search
# keeps (see its comment above OVERLOAD): traffic past it queues in front of the engine without
# bound, yet a run 1 % past it climbs within SUSTAIN_SLOPE, so neither a sweep point nor a
# confirmation run can be trusted to show it; the sweep stops at the ceiling once that meets the
# SLO (`RatePlan.ceiling`).
PLAN_FRACTIONS = tuple(round(0.1 * i, 1) for i in range(1, 10))
PLAN_PAST_FRACTIONS = (1.0, 1.1, 1.2, 1.35, 1.5, 1.75, 2.0)
PLAN_FLOOR_FRACTION = 0.02  # tried when even 10 % of saturation misses the SLO
PLAN_PRECISION = 0.01
PLAN_NUM_PROMPTS = 3000  # requests a point to start from (and the saturation run's)
# A point is judged on a steady window of at least this many requests and this many seconds of
# arrivals (the window grows the run, up to STEADY_MAX_REQUESTS): short windows flatter rates
# near saturation, where the queue takes minutes to show that it keeps growing.
PLAN_MIN_WINDOW = 1000
PLAN_MIN_WINDOW_S = 60.0
PLAN_MIN_PROMPTS = 1000  # fewer requests a point than this cannot show a steady state
PLAN_SEEDS = 3
PLAN_CONFIRM_PROMPTS = 20_000  # the answer is rerun this long on a seed the search did not use
PLAN_CONFIRM_NEW_SEEDS = 7  # the answer is confirmed on the search's seeds and this many unused ones
# The replicas check: the peak run long enough for every replica to reach its steady state.
ROUTER_POLICIES = ("round-robin", "least-outstanding-requests")
ROUTER_MIN_SECONDS = 120.0
ROUTER_MIN_PER_REPLICA = 2000
ROUTER_MAX_EXTRA = 4  # replicas tried beyond the first proposal when the peak misses



@dataclass
class PlanPoint:
    rate: float
    summary: object  # RunSummary
    window: dict  # latency_percentiles of the steady window (the whole run at rate inf)
    misses: list[str]
    stage: str  # "saturation", "coarse", "floor" or "bisect"
    falls_behind: bool = False
    """The replica falls behind its traffic here (its run does not settle, or the rate is above
    the saturated rate or the API server's ceiling): its last miss says so, and a plan whose first
    miss this is is limited by throughput, not by its SLO."""

    @property
    def ok(self) -> bool:
        return not self.misses


@dataclass
class RatePlan:
    slo: Slo
    saturated: PlanPoint
    """Every request queued at once (the table's last row)."""
    saturated_rate: float = 0.0
    """The saturated rate (`saturation.rate`): exact, or the full queue's rate (a lower bound)
    when the full queue thrashes the KV cache."""
    saturation: Saturation | None = None
    points: list[PlanPoint] = field(default_factory=list)
    best: PlanPoint | None = None
    """The highest rate meeting the SLO; None when no rate does."""
    bracket_high: float | None = None
    """The lowest rate seen to miss the SLO above `best` (None if none missed)."""
    precision: float = 0.0
    """The answer is within this many req/s below the true limit."""
    limited_by: str = ""
    """"slo" (a latency target is missed first) or "throughput" (the replica falls behind
    first, within the SLO: the answer is just below the saturated rate)."""
    first_miss: PlanPoint | None = None
    """The point just above `best` that missed."""
    warnings: list[str] = field(default_factory=list)
    """Points whose runs were too short to judge."""

    @property
    def feasible(self) -> bool:
        return self.best is not None

    @property
    def cap(self) -> float | None:
        """The rate no answer may exceed: the saturated rate when known exactly, else None (the
        confirmation runs judge whether an answer keeps up)."""
        return self.saturated_rate if self.saturation is None or self.saturation.exact else None

    @property
    def ceiling(self) -> float:
        """The highest rate the search tries: what the API server sustains (math.inf without one),
        as `sim.curves.saturation` caps its own search; the cap, when known, is at most this."""
        return self.saturation.api_server_rate if self.saturation is not None else math.inf

    @property
    def closest(self) -> PlanPoint:
        """When nothing meets the SLO: the point that missed it by least."""
        return min(self.points, key=lambda p: (self.slo.excess(p.window), p.rate))


def window_needed(rate: float, min_window: int, min_window_s: float) -> int:
    """Requests a steady window must hold at `rate`: `min_window`, and `min_window_s` seconds."""
    if not math.isfinite(rate):
        return min_window
    return max(min_window, math.ceil(rate * min_window_s))


def plan_rate(run_at: Callable[[float, int], object], slo: Slo, num_prompts: int,
              precision: float = PLAN_PRECISION, min_window: int | None = None,
              min_window_s: float | None = None) -> RatePlan:
    """The highest request rate, up to the saturated rate and never above the API server's ceiling
    (`RatePlan.ceiling`), whose steady-state latency meets `slo`.

    `run_at(rate, num_prompts)` runs the scenario at that rate (math.inf = all queued at once)
    and returns its RunSummary. The saturated rate (`sim.curves.saturation` on `num_prompts`
    requests, without its long search) sets the scale of the search and caps it. Each rate is
    measured at its steady state (`sim.curves.measure_rate`) over a window of at least
    `min_window` requests and `min_window_s` seconds of arrivals; a rate whose run does not
    settle, or whose window stays too short even at the longest run, counts as a miss (the
    latter also as a warning).
    """
    min_window = PLAN_MIN_WINDOW if min_window is None else min_window
    min_window_s = PLAN_MIN_WINDOW_S if min_window_s is None else min_window_s
    sat = saturation(run_at, num_prompts, overload_prompts=num_prompts, search=False)
    sat_summary = sat.backlog
    sat_rate = sat.rate
    sat_window = latency_percentiles(sat_summary.records)
    saturation_point = PlanPoint(math.inf, sat_summary, sat_window, slo.misses(sat_window), "saturation")
    plan = RatePlan(slo, saturation_point, saturated_rate=sat_rate, saturation=sat)
    plan.precision = precision * sat_rate
    cap = plan.cap

    last_warmup = [0.0]  # the previous point's warm-up: sizes the next run so it rarely reruns

    def evaluate(rate: float, stage: str) -> PlanPoint:
        need = window_needed(rate, min_window, min_window_s)
        point = measure_rate(run_at, rate, num_prompts=num_prompts, min_window=need, saturated=cap,
                             warmup_hint=last_warmup[0], enough=lambda s: bool(slo.misses(s.metrics)))
        last_warmup[0] = point.extra["warmup"]
        misses = slo.misses(point.window)
        if not point.bounded:
            misses.append(point.note)
        elif point.window["count"] < need and not misses:
            misses.append(f"too short to judge: its steady window holds {point.window['count']} requests, "
                          f"not the {need} needed")
            plan.warnings.append(f"at {rate:.2f} req/s even {point.num_prompts:,} requests leave a steady "
                                 f"window of only {point.window['count']} (want {need})")
        p = PlanPoint(rate, point.summary, point.window, misses, stage, falls_behind=not point.bounded)
        plan.points.append(p)
        return p

    if sat_rate <= 0:
        return plan
    lo: PlanPoint | None = None
    hi: PlanPoint | None = None
    ceiling = plan.ceiling
    for frac in PLAN_FRACTIONS + (() if cap is not None else PLAN_PAST_FRACTIONS):
        p = evaluate(within_ceiling(frac * sat_rate, ceiling), "coarse")
        if not p.ok:
            hi = p
            break
        lo = p
        if p.rate >= ceiling:
            break
    if lo is None:
        floor = evaluate(PLAN_FLOOR_FRACTION * sat_rate, "floor")
        if not floor.ok:
            return plan
        lo = floor
    if hi is None:  # met up to the top of the sweep: the saturated rate bounds it from above
        if cap is None and lo.rate >= ceiling:
            hi = PlanPoint(ceiling, sat_summary, sat_window,
                           [f"above the API server's ceiling ({ceiling:.2f} req/s, the most it sustains) the "
                            "queue grows without bound"], "saturation", falls_behind=True)
        elif cap is not None:
            hi = PlanPoint(sat_rate, sat_summary, sat_window,
                           [f"above the saturated rate ({sat_rate:.2f} req/s) the queue grows without bound"],
                           "saturation", falls_behind=True)
        else:  # twice what a thrashing full queue serves met it: not searched further
            hi = PlanPoint(lo.rate, sat_summary, sat_window, [f"not tried past {lo.rate:.2f} req/s"], "saturation")
    while hi.rate - lo.rate > plan.precision:
        p = evaluate((lo.rate + hi.rate) / 2, "bisect")
        if p.ok:
            lo = p
        else:
            hi = p
    plan.best, plan.bracket_high = lo, hi.rate
    plan.limited_by = "throughput" if hi.falls_behind else "slo"
    plan.precision = hi.rate - lo.rate
    plan.first_miss = hi
    return plan


# -- several seeds, and the answer confirmed ---------------------------------------------------

@dataclass
class SeededPlan:
    """The search run on several seeds: the answer is at most the lowest seed's limit (a rate
    every seed sustained), with the spread between seeds, then confirmed on longer runs of those
    seeds and of seeds the search did not use (stepped down until every one meets the SLO and a
    seed not yet tried is predicted to, `holds`). Near the limit p99 TPOT differs by a
    millisecond or more between seeds even over 20,000 requests, so one confirmation run is not
    enough."""

    plans: list[RatePlan]
    seeds: list[int]
    confirm_seeds: list[int] = field(default_factory=list)
    confirm_tries: list[tuple[float, list[PlanPoint]]] = field(default_factory=list)
    """(rate, one point per confirmation seed) for each rate tried, the last one the answer."""

    @property
    def slo(self) -> Slo:
        return self.plans[0].slo

    def holds(self, points) -> list[str]:
        return holds(points, self.slo, runs=len(self.confirm_seeds) or None)

    @property
    def confirmed(self) -> bool:
        return any(not self.holds(points) for _, points in self.confirm_tries)

    @property
    def _answer_try(self) -> tuple[float, list[PlanPoint]]:
        """The highest rate the confirmation runs vouch for (the last try when none does)."""
        met = [t for t in self.confirm_tries if not self.holds(t[1])]
        return max(met, key=lambda t: t[0]) if met else self.confirm_tries[-1]

    @property
    def feasible(self) -> bool:
        return all(p.feasible for p in self.plans) and (not self.confirm_tries or self.confirmed)

    @property
    def rates(self) -> list[float]:
        return [p.best.rate for p in self.plans if p.feasible]

    @property
    def rate(self) -> float:
        """The answer: the confirmed rate (at most the lowest seed's limit)."""
        if self.confirmed:
            return self._answer_try[0]
        return min(self.rates)

    @property
    def confirm_points(self) -> list[PlanPoint]:
        return self._answer_try[1] if self.confirm_tries else []

    @property
    def predicted(self) -> dict:
        """The answer's predicted p99s for a seed not yet tried (`predicted_p99s`)."""
        return predicted_p99s(self.confirm_points, self.slo) if self.confirm_tries else {}

    @property
    def spread(self) -> float:
        return max(self.rates) - min(self.rates) if self.rates else 0.0

    @property
    def saturated_rate(self) -> float:
        return min(p.saturated_rate for p in self.plans)

    @property
    def cap(self) -> float | None:
        """The lowest seed's saturated rate, or None when any seed's is only a lower bound."""
        caps = [p.cap for p in self.plans]
        return None if any(c is None for c in caps) else min(caps)

    @property
    def limiting(self) -> RatePlan:
        """The seed's plan that set the answer (the lowest limit), or the first infeasible one."""
        bad = [p for p in self.plans if not p.feasible]
        if bad:
            return bad[0]
        return min(self.plans, key=lambda p: p.best.rate)

    @property
    def warnings(self) -> list[str]:
        return [w for p in self.plans for w in p.warnings]


def confirm_point(run_at, slo: Slo, rate: float, saturated: float | None,
                  num_prompts: int = PLAN_CONFIRM_PROMPTS, min_window: int = PLAN_MIN_WINDOW,
                  min_window_s: float = PLAN_MIN_WINDOW_S) -> PlanPoint:
    """`rate` run long (`num_prompts` requests, more if its window needs them) and judged; above
    `saturated` (None: not known exactly) it misses, and a run as long as the saturated rate's
    horizon misses if its latency climbs."""
    need = window_needed(rate, min_window, min_window_s)
    point = measure_rate(run_at, rate, num_prompts=num_prompts, saturated=saturated, min_window=need,
                         max_requests=max(num_prompts, 2 * need))
    misses = slo.misses(point.window)
    if not point.bounded:
        misses.append(point.note)
    return PlanPoint(rate, point.summary, point.window, misses, "confirm", falls_behind=not point.bounded)


def confirm_rate(evaluate: Callable[[float], list[PlanPoint]], rate: float, step: float,
                 refine: int = 2,
                 holds: Callable[[list[PlanPoint]], list[str]] | None = None) -> list[tuple[float, list[PlanPoint]]]:
    """Judge `rate` on the confirmation runs (`evaluate(rate)`: one point per seed; they vouch
    for it when `holds(points)` is empty, by default when every point meets the SLO); while
    they do not, step down by `step`, doubling the step each time, until a rate holds or the
    steps pass 0 (about log2(rate / step) tries: a flat curve, whose short runs put the rate far
    above what long runs vouch for, is followed down however far; a fixed number of tries once
    called such a deployment infeasible at any rate); once a rate passes after a miss, bisect
    between them `refine` times (not finer than `step`). Returns every rate tried with its
    points; the answer is the highest rate they vouch for."""
    if holds is None:
        def holds(points):
            return [m for p in points for m in p.misses]
    tried = []
    first_step = step
    bad = None
    while True:
        if rate <= 0:
            break
        points = evaluate(rate)
        tried.append((rate, points))
        if not holds(points):
            break
        bad = rate
        rate -= step
        step *= 2
    good = max(rate, 0.0)  # (stepped to 0 or below: nothing vouched for; bisect above 0, never at it)
    for _ in range(refine if bad is not None else 0):
        mid = (good + bad) / 2
        if mid - good < first_step:
            break
        points = evaluate(mid)
        tried.append((mid, points))
        if not holds(points):
            good = mid
        else:
            bad = mid
    return tried


def seeded_plan(scenario, seeds: int, plan_seeds: Callable[[list], list[RatePlan]],
                confirm_seeds: Callable[[list, float, float | None], list[PlanPoint]],
                new_seeds: int | None = None, batch: int | None = None) -> SeededPlan:
    """`batchtui plan`'s answer for one deployment, which `batchtui search` confirms its best
    points with: the search on `seeds` seeds from the scenario's (`plan_seeds(scenarios)`: a
    `plan_rate` for each), then, if every seed meets the SLO, the lowest seed's answer confirmed
    on longer runs of those seeds and `new_seeds` more (`confirm_seeds(scenarios, rate,
    saturated)`: a `confirm_point` for each, `saturated` the lowest seed's saturated rate or None
    when one is only a lower bound), stepped down by `confirm_rate` until the runs vouch for it
    (`holds`). The callers say where the runs happen (plan's pool of jobs, or search's worker).
    `new_seeds` None: PLAN_CONFIRM_NEW_SEEDS. `batch`: a rate's confirmation runs are made this
    many at a time and stop after the first batch holding a run that misses the SLO, or after
    which a new seed is predicted to miss whatever the runs not made measure (`bound_misses`): the
    rate fails whatever the other seeds show, so every rate's verdict, and so the rates tried and
    the answer, are those of every run made (None: all at once). The seeds that missed on the last
    rate that ran them run first, then the others by how close they came (`confirm_order`): the
    rates are tried downwards, so a seed that came close above is the likeliest to miss again. A
    rate's points are kept in seed order whichever ran first: a rate that holds (every run made)
    has the points it has with every run made; a rate that fails keeps the runs made, and the
    miss `holds` names is the first among them."""
    if new_seeds is None:
        new_seeds = PLAN_CONFIRM_NEW_SEEDS
    seed_list = [scenario.seed + i for i in range(seeds)]
    result = SeededPlan(plan_seeds([replace(scenario, seed=s) for s in seed_list]), seed_list)
    if all(p.feasible for p in result.plans):
        result.confirm_seeds = [scenario.seed + i for i in range(seeds + new_seeds)]
        confirming = [replace(scenario, seed=s) for s in result.confirm_seeds]
        size = len(confirming) if batch is None else max(1, batch)
        last: dict[int, PlanPoint] = {}  # each confirmation seed's run on the last rate that ran it

        def evaluate(rate: float) -> list[PlanPoint]:
            made: dict[int, PlanPoint] = {}
            order = confirm_order(len(confirming), last, result.slo)
            for first in range(0, len(order), size):
                chunk = order[first:first + size]
                made.update(zip(chunk, confirm_seeds([confirming[i] for i in chunk], rate, result.cap)))
                if not all(p.ok for p in made.values()) or bound_misses(list(made.values()), result.slo, len(order)):
                    break
            last.update(made)
            return [made[i] for i in sorted(made)]

        result.confirm_tries = confirm_rate(evaluate, min(result.rates), result.limiting.precision or 0.01,
                                            holds=result.holds)
    return result


# -- replicas behind a router --------------------------------------------------------------------

@dataclass
class RouterCheck:
    """The peak traffic spread over `replicas` replicas by a router `policy`, simulated."""

    policy: str
    replicas: int
    peak_rate: float
    window: dict
    """latency_percentiles over every replica's steady window, pooled."""
    misses: list[str]
    per_replica: list[int]
    """Requests each replica served."""
    unsettled: list[int] = field(default_factory=list)
    """Replicas whose latency still climbed through the run."""
    behind_prefill: float = 0.0
    """Share of the pooled steady windows' requests that reached their replica before every
    request sent there earlier had its first token (`behind_a_prefill`): their prefills queue.
    A replica's TTFT tail comes from these, not from how many requests it holds."""

    @property
    def ok(self) -> bool:
        return not self.misses


def route(specs, engines, policy: str) -> dict[str, float]:
    """Send `specs` (in arrival order) to `engines` by `policy` and run them all to the end.
    Round-robin takes replicas in turn; least-outstanding-requests picks the replica with the
    fewest requests sent and not yet finished at the arrival (the lowest index on a tie).
    Returns each request's true arrival time: a request sent to an engine whose clock has already
    passed it (the iteration under way ends after the arrival) is recorded from that clock."""
    arrivals: dict[str, float] = {}
    n = len(engines)
    if policy == "round-robin":
        for i, spec in enumerate(specs):
            engines[i % n].submit(spec)
    elif policy == "least-outstanding-requests":
        sent = [0] * n
        for spec in specs:
            t = spec.arrival_time
            best, best_load = 0, None
            for r, engine in enumerate(engines):
                engine.advance_until(t)
                load = sent[r] - finished_by(engine, t)
                if best_load is None or load < best_load:
                    best, best_load = r, load
            engines[best].submit(spec)
            sent[best] += 1
            arrivals[spec.request_id] = t
    else:
        raise ValueError(f"unknown router policy {policy!r}")
    for engine in engines:
        engine.run()
    return arrivals


def finished_by(engine, t: float) -> int:
    """Requests the engine finished at or before time t (its last iteration may end after t)."""
    records = engine.metrics.records
    done = engine.metrics.completed
    k = len(records) - 1
    while k >= 0:
        r = records[k]
        if r.arrival_time + r.e2e <= t:
            break
        done -= 1
        k -= 1
    return done


def router_columns(engine, arrivals: dict[str, float]) -> Columns:
    """An engine's finished requests as Columns, TTFT and E2E counted from the true arrival."""
    cols = Columns.of(engine.metrics.records)
    if arrivals:
        ids = [r.request_id for r in engine.metrics.records]
        true = np.array([arrivals.get(i, a) for i, a in zip(ids, cols["arrival_time"])], dtype=float)
        late = cols["arrival_time"] - true
        cols = Columns({**cols.arrays, "arrival_time": true, "ttft": cols["ttft"] + late,
                        "e2e": cols["e2e"] + late})
    return cols


def check_router(scenario, profiles, policy: str, replicas: int, peak_rate: float, slo: Slo,
                 num_prompts: int, router: Callable = route) -> RouterCheck:
    """Simulate `num_prompts` requests of the scenario's traffic at `peak_rate` over `replicas`
    replicas behind a `policy` router, and judge the SLO on the pooled steady windows. `router`:
    what sends the requests, as `route` (benchmarks/routers.py tries other rules)."""
    from sim.curves import at_rate
    from sim.engine import Engine
    from sim.workload import WorkloadSpec, generate_queue

    peak = at_rate(scenario, peak_rate, num_prompts)
    specs = list(generate_queue(peak.workload, np.random.default_rng(peak.seed)))
    idle = replace(scenario, workload=WorkloadSpec(arrival="all-at-once", num_prompts=0))
    engines = [Engine(idle, profiles=profiles, keep_requests=False, api_server=True) for _ in range(replicas)]
    arrivals = router(specs, engines, policy)
    windows, unsettled, served = [], [], []
    behind = 0
    for r, engine in enumerate(engines):
        cols = router_columns(engine, arrivals)
        served.append(len(cols))
        window, _ = steady_window(cols)
        windows.append(window)
        behind += behind_a_prefill(window)
        if latency_percentiles(window)["e2e_slope"] > BACKLOG_SLOPE:
            unsettled.append(r)
    pooled = Columns({name: np.concatenate([w[name] for w in windows]) for name in Columns.NAMES})
    stats = latency_percentiles(pooled)
    misses = slo.misses(stats)
    if unsettled:
        misses.append(f"replica{'s' if len(unsettled) > 1 else ''} {', '.join(str(r + 1) for r in unsettled)} "
                      "fall behind (latency climbs through the run)")
    failed = sum(len(e.metrics.failed) for e in engines)
    if failed:
        misses.append(f"{failed} requests failed")
    return RouterCheck(policy, replicas, peak_rate, stats, misses, served, unsettled,
                       behind / len(pooled) if len(pooled) else 0.0)


def behind_a_prefill(cols: Columns) -> int:
    """Requests of one replica that reached it before every request that came before them had
    its first token (by true arrival): each waits for an earlier prompt's prefill, or shares an
    iteration's token budget with it, before its own first token."""
    order = np.argsort(cols["arrival_time"], kind="stable")
    came = cols["arrival_time"][order]
    first = np.maximum.accumulate(came + cols["ttft"][order])
    return int(np.count_nonzero(came[1:] < first[:-1]))


def router_prompts(peak_rate: float, replicas: int, min_seconds: float | None = None,
                   min_per_replica: int | None = None) -> int:
    """Requests for a replicas check: two minutes of the peak, and enough for every replica
    (ROUTER_MIN_SECONDS and ROUTER_MIN_PER_REPLICA unless given)."""
    min_seconds = ROUTER_MIN_SECONDS if min_seconds is None else min_seconds
    min_per_replica = ROUTER_MIN_PER_REPLICA if min_per_replica is None else min_per_replica
    return max(math.ceil(peak_rate * min_seconds), replicas * min_per_replica)


def replicas_for_peak(first: int, check: Callable[[int], list[RouterCheck]],
                      max_extra: int | None = None) -> tuple[int | None, list[list[RouterCheck]]]:
    """The fewest replicas, from `first` (the proposal, `sim.planning.replicas_needed`) up to
    `max_extra` more (ROUTER_MAX_EXTRA), whose peak traffic meets the SLO behind every router
    policy (`check(count)`: a `check_router` for each of ROUTER_POLICIES), or None; with every
    count's checks. `batchtui plan` and `batchtui search` both size replicas so."""
    checks = []
    for count in range(first, first + (ROUTER_MAX_EXTRA if max_extra is None else max_extra) + 1):
        checked = check(count)
        checks.append(checked)
        if all(c.ok for c in checked):
            return count, checks
    return None, checks
