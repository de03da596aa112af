"""Throughput against latency: one request rate measured at its steady state, the saturated rate,
and where a curve bends (its knee). One definition of each, shared by the lessons' curves,
`batchtui sweep` and `batchtui plan`, so no two screens can disagree about them.

A rate has a steady state only up to what the engine sustains: its saturated rate, the highest
arrival rate at which a long run keeps up (`saturation`). Above it the queue grows for as long as
requests keep coming: a run's TTFT then measures the run's length, not the rate, so such a point
is reported as unbounded instead of with a latency that a longer run would contradict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .engine import RunSummary, run_scenario
from .remembered import Remembered
from .scenario import Scenario

__all__ = [
    "BACKLOG_SLOPE", "Columns", "HEAVY_TRAFFIC", "at_rate", "KNEE_LATENCY_FACTOR", "Knee", "OVERLOAD",
    "OVERLOAD_PROMPTS", "RatePoint", "STEADY_MAX_REQUESTS", "STEADY_MIN_REQUESTS", "SUSTAIN_PRECISION",
    "SUSTAIN_REQUESTS", "SUSTAIN_SLOPE", "Saturation", "find_knee", "keeps_up", "latency_percentiles",
    "measure_rate", "overload_prompts", "rate_sweep", "runner", "saturated_point", "saturation", "service_rate",
    "steady_point", "steady_window", "window_for_load", "Remembered"]

# -- the knee ------------------------------------------------------------------------------------

# Walking up a sweep, the knee is the last point before
#  (a) the latency p99 exceeds KNEE_LATENCY_FACTOR times its value at the first (lowest-load)
#      point -- TTFT for a sweep over request rates, TPOT for one over batch sizes or seats --, or
#  (b) throughput stops rising: it gains less than KNEE_MIN_GAIN (5 %) over the previous point,
#      or, for closely spaced points, less than a quarter of the relative step in the swept value
#      (a 2 % step in rate must bring at least 0.5 % more throughput), or
#  (c) the next point has no steady state (its queue grows without bound).
KNEE_LATENCY_FACTOR = 4.0
KNEE_MIN_GAIN = 0.05
KNEE_STEP_SHARE = 0.25


@dataclass(frozen=True)
class Knee:
    index: int | None
    """The knee point, or None when the curve has not bent within the sweep."""
    reason: str
    """"latency", "throughput", "unbounded", or "" when there is no knee."""
    detail: str = ""
    """What happened at the point after the knee, with the numbers."""

    def explain(self, values: Sequence[float], label: str, factor: float = KNEE_LATENCY_FACTOR,
                latency_name: str = "TTFT") -> str:
        if self.index is None:
            if self.reason == "unbounded":
                return f"No knee: {self.detail}."
            return (f"No knee within the sweep: throughput still rises and {latency_name} p99 stays "
                    f"within {factor:g}x its value at the first point up to the last; sweep further.")
        return f"Knee at {label} {_shown(values[self.index])}: {self.detail}."


def _shown(v: float) -> str:
    return "inf" if isinstance(v, float) and math.isinf(v) else f"{v:g}"


def find_knee(values: Sequence[float], throughput: Sequence[float], latency_p99: Sequence[float],
              factor: float = KNEE_LATENCY_FACTOR, latency_name: str = "TTFT",
              bounded: Sequence[bool] | None = None) -> Knee:
    """The knee of a sweep whose `values` (request rates, batch sizes or max_num_seqs) ascend.

    `latency_p99` is TTFT p99 for a sweep over rates and TPOT p99 (or time per token) for one
    over batch sizes or seats. `bounded[i]` False marks a point without a steady state (see
    `measure_rate`): the curve has bent before it whatever its numbers say."""
    n = len(values)
    ok = list(bounded) if bounded is not None else [True] * n
    if n and not ok[0]:
        return Knee(None, "unbounded", f"even the first point, {_shown(values[0])}, has no steady state "
                                       "(its queue grows without bound)")
    if n < 2:
        return Knee(None, "")
    base = latency_p99[0]
    for j in range(1, n):
        if not ok[j]:
            return Knee(j - 1, "unbounded", f"at {_shown(values[j])} the queue grows without bound")
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


# -- the steady part of a run ------------------------------------------------------------------

# Latency percentiles come from the steady part of a run: requests arriving at least one median
# end-to-end latency after the first arrival and one before the last. A short run never fills
# the batch (the ramp-up and the drain at the end run at a smaller batch than the rate
# sustains), so whole-run percentiles flatter rates near saturation. A run whose window holds
# fewer than STEADY_MIN_REQUESTS is repeated with more requests, up to STEADY_MAX_REQUESTS.
STEADY_MIN_REQUESTS = 400
STEADY_MAX_REQUESTS = 20_000

# Near the saturated rate a queue forms and drains in excursions that last longer the closer the
# load: the run length a steady-state estimate needs for a given relative precision grows as
# (1 - rho)^-2, rho the load over the saturated rate (Whitt, "Planning queueing simulations",
# Management Science 35(11), 1989). Past HEAVY_TRAFFIC the window a rate needs grows so:
# 256 seats, 512/256 at 36 req/s (rho 0.99): p99 TTFT 151-856 ms over 1,500-request windows on
# three seeds, 1.5-2.6 s over 20,000 requests.
HEAVY_TRAFFIC = 0.9


def window_for_load(min_window: int, rate: float, saturated: float | None) -> int:
    """Requests a steady window needs at `rate`: `min_window`, times ((1 - HEAVY_TRAFFIC) /
    (1 - rho))^2 past HEAVY_TRAFFIC (rho = rate / saturated; a rate at the saturated rate or with
    none known: `min_window`; the run's cap, STEADY_MAX_REQUESTS or the caller's, bounds it)."""
    if saturated is None or not math.isfinite(rate) or saturated <= 0 or rate >= saturated:
        return min_window
    rho = rate / saturated
    return min_window if rho <= HEAVY_TRAFFIC else math.ceil(min_window * ((1 - HEAVY_TRAFFIC) / (1 - rho)) ** 2)

# A replica keeps up when, over the steady window, end-to-end latency does not climb with the
# arrival time. Above what it sustains, each request waits for the backlog the ones before it
# left, so E2E climbs by (rate / service rate - 1) seconds per second of arrivals: 1 % too much
# traffic adds 36 s of latency an hour. A least-squares slope of E2E against arrival is judged
# two ways:
# - on a run of SUSTAIN_REQUESTS (the horizon the saturated rate is defined over) above
#   SUSTAIN_SLOPE: the queue grows. Steady 20,000-request runs of chat traffic near saturation
#   give slopes within +-0.007 (seeds 0-5, 512/256 and lognormal lengths, 256 and 1,024 seats),
#   runs 1 % past the service rate 0.005-0.011, and runs past a KV-thrash collapse 0.04 and more;
# - on a shorter run, only when no saturated rate is known, above BACKLOG_SLOPE: such a run may
#   still be warming up (near saturation the batch takes several E2Es to fill, which a short run
#   reads as a climb of 0.08 where a long one at the same rate reads 0), so only a steep climb
#   says the queue grows.
SUSTAIN_REQUESTS = 20_000
SUSTAIN_SLOPE = 0.01
BACKLOG_SLOPE = 0.05


class Columns:
    """Finished requests as arrays (arrival_time, ttft, e2e, tpot with NaN for one-token answers,
    output_len), read from a RecordTable or from any sequence of records; a subset by mask."""

    NAMES = ("arrival_time", "ttft", "e2e", "tpot", "output_len")

    def __init__(self, arrays: dict) -> None:
        self.arrays = arrays

    @classmethod
    def of(cls, records) -> "Columns":
        if isinstance(records, Columns):
            return records
        if hasattr(records, "column"):
            return cls({name: records.column(name) for name in cls.NAMES})
        return cls({
            "arrival_time": np.array([r.arrival_time for r in records], dtype=float),
            "ttft": np.array([r.ttft for r in records], dtype=float),
            "e2e": np.array([r.e2e for r in records], dtype=float),
            "tpot": np.array([np.nan if r.tpot is None else r.tpot for r in records], dtype=float),
            "output_len": np.array([r.output_len for r in records], dtype=float),
        })

    def __len__(self) -> int:
        return len(self.arrays["arrival_time"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def where(self, mask: np.ndarray) -> "Columns":
        return Columns({name: a[mask] for name, a in self.arrays.items()})


def steady_window(records) -> tuple[Columns, float]:
    """The requests that arrived in the steady part of the run (as Columns), and the warm-up."""
    cols = Columns.of(records)
    if not len(cols):
        return cols, 0.0
    arrivals = cols["arrival_time"]
    warmup = float(np.median(cols["e2e"]))
    lo, hi = arrivals.min() + warmup, arrivals.max() - warmup
    return cols.where((arrivals >= lo) & (arrivals <= hi)), warmup


def latency_percentiles(records) -> dict:
    """p50 and p99 of TTFT and TPOT over these records, in ms (keys as vllm bench serve's), how
    fast E2E climbs with arrival time (`e2e_slope`, s per s), and the load these requests carried
    (`request_throughput`, `output_throughput`: their requests and output tokens over the span
    of their arrivals -- in a steady window, what the engine delivers; whole-run figures are
    diluted by the ramp-up and the drain)."""
    cols = Columns.of(records)
    n = len(cols)
    ttft = cols["ttft"] * 1000.0
    tpot = cols["tpot"][~np.isnan(cols["tpot"])] * 1000.0
    arrivals = cols["arrival_time"]
    e2e = cols["e2e"]
    slope = 0.0
    if n >= 10 and np.ptp(arrivals) > 0:
        slope = float(np.polyfit(arrivals, e2e, 1)[0])
    d = {"count": n, "e2e_slope": slope,
         "mean_e2e_ms": float(np.mean(e2e)) * 1000.0 if n else 0.0,
         "mean_output_len": float(np.mean(cols["output_len"])) if n else 0.0}
    span = float(np.ptp(arrivals)) if n >= 2 else 0.0
    d["request_throughput"] = (n - 1) / span if span > 0 else 0.0
    d["output_throughput"] = d["request_throughput"] * d["mean_output_len"]
    for name, arr in (("ttft", ttft), ("tpot", tpot)):
        d[f"median_{name}_ms"] = float(np.median(arr)) if len(arr) else 0.0
        d[f"p99_{name}_ms"] = float(np.percentile(arr, 99)) if len(arr) else 0.0
    return d


# -- one rate, measured ---------------------------------------------------------------------------

RunAt = Callable[[float, int], RunSummary]
"""Runs the scenario under study at a request rate (math.inf = all queued at once) with a number
of requests, and returns its summary with per-request records."""


def at_rate(scenario: Scenario, rate: float, num_prompts: int) -> Scenario:
    """The scenario's traffic at another mean rate and length: generated traffic is drawn at
    that rate; a trace is rescaled in time to it and cut or repeated to that many requests."""
    if scenario.workload.arrival == "trace":
        return scenario.with_workload(trace_rate=float(rate), trace_requests=int(num_prompts))
    return scenario.with_workload(request_rate=float(rate), num_prompts=int(num_prompts))


def runner(scenario: Scenario, **engine_kwargs) -> RunAt:
    """A `RunAt` for a scenario: its traffic at another rate and length (`at_rate`), records kept."""

    def run_at(rate: float, num_prompts: int) -> RunSummary:
        return run_scenario(at_rate(scenario, rate, num_prompts), keep_records=True, **engine_kwargs)

    return run_at


@dataclass
class RatePoint:
    """A request rate run long enough to judge it: its steady latencies, or why it has none."""

    rate: float
    """Requests per second offered (math.inf = all queued at once)."""
    summary: RunSummary
    """The last run made for this point (its whole-run metrics, with records)."""
    window: dict
    """`latency_percentiles` of the steady window (the whole run when it is too short)."""
    bounded: bool = True
    """False when the queue grows without bound at this rate: the latencies in `window` then
    measure the run's length, not the rate, and must not be drawn as a steady value."""
    note: str = ""
    """Why the point is unbounded, in words."""
    num_prompts: int = 0
    """Requests in the run behind it."""
    extra: dict = field(default_factory=dict)

    @property
    def metrics(self) -> dict:
        return self.summary.metrics


def measure_rate(run_at: RunAt, rate: float, *, num_prompts: int = 0, saturated: float | None = None,
                 min_window: int = STEADY_MIN_REQUESTS, max_requests: int = STEADY_MAX_REQUESTS,
                 warmup_hint: float = 0.0, enough: Callable[[RunSummary], bool] | None = None) -> RatePoint:
    """Run `rate` until its steady window holds `min_window` requests (more near the saturated
    rate, `window_for_load`), or `max_requests` were run, and judge whether it settles.

    A rate above `saturated` (the highest rate the engine sustains, `saturation`) has no steady
    state, whatever its run shows; at or below it, only a run as long as the runs the saturated
    rate is judged on (SUSTAIN_REQUESTS) can say otherwise, if its E2E climbs faster than
    SUSTAIN_SLOPE. Without a saturated rate, a run climbing faster than BACKLOG_SLOPE
    (SUSTAIN_SLOPE from SUSTAIN_REQUESTS on) is unbounded. `warmup_hint`
    (a previous point's warm-up, seconds) sizes the first run so it rarely has to be repeated.
    `enough(summary)` may stop the growing early (the plan stops once the whole run already
    misses its SLO: a longer run would miss it too)."""

    min_window = window_for_load(min_window, rate, saturated)

    def needed(warmup: float) -> int:
        # Arrivals must span the warm-up, the cool-down and the window itself.
        if not math.isfinite(rate):
            return max(num_prompts, min_window)
        return math.ceil(1.2 * (rate * 2 * warmup + min_window))

    above = saturated is not None and math.isfinite(rate) and rate > saturated
    n = max(num_prompts, min_window) if above else min(max_requests, max(num_prompts, needed(warmup_hint)))
    while True:
        summary = run_at(rate, n)
        window, warmup = steady_window(summary.records)
        if above or len(window) >= min_window or n >= max_requests or not math.isfinite(rate):
            break  # past saturation a longer run only lengthens the queue
        if enough is not None and enough(summary):
            break
        n = min(max_requests, max(2 * n, needed(warmup)))
    stats = latency_percentiles(window if len(window) else summary.records)
    point = RatePoint(rate, summary, stats, num_prompts=n, extra={"warmup": warmup})
    limit = SUSTAIN_SLOPE if n >= SUSTAIN_REQUESTS else (BACKLOG_SLOPE if saturated is None else math.inf)
    if above:
        point.bounded = False
        point.note = (f"{rate:g} req/s is above the saturated rate ({saturated:.2f} req/s, the most it "
                      "sustains): the queue grows without bound")
    elif math.isfinite(rate) and stats["e2e_slope"] > limit:
        point.bounded = False
        point.note = (f"the run does not settle (E2E climbs {stats['e2e_slope'] * 1000:.0f} ms per "
                      "second of arrivals)")
    return point


def keeps_up(summary: RunSummary) -> tuple[bool, float]:
    """Whether a run at a finite rate kept up with its traffic (its steady window's E2E climbs
    no faster than SUSTAIN_SLOPE), and that slope in seconds per second of arrivals."""
    window, _ = steady_window(summary.records)
    slope = latency_percentiles(window if len(window) >= 10 else summary.records)["e2e_slope"]
    return slope <= SUSTAIN_SLOPE, slope


# -- the saturated rate ----------------------------------------------------------------------------

# The saturated rate is the highest request rate a replica keeps up with: a run of
# SUSTAIN_REQUESTS arriving at that rate (the scenario's own arrival process, at that mean) whose
# latency does not climb (`keeps_up`). It is not what the engine completes with every request
# queued at once (vLLM's --request-rate inf, kept as `Saturation.backlog`): such a burst starts
# every request in step and, once the batch outgrows the KV cache, preempts and recomputes, so it
# reads lower than rates that sustain (Llama 3.1 8B on an H100, 1,024 seats, 512/256: 33.2 req/s
# from 1,000 queued at once, while 20,000 requests at 37 req/s keep up).
#
# It is found in two steps:
# 1. Traffic at OVERLOAD times the burst's rate, OVERLOAD_PROMPTS requests: the queue fills and
#    stays full, arrivals are staggered as in steady traffic, and the middle half of the
#    completions gives the service rate with a full queue (`service_rate`; seeds 0-3 read
#    36.3-36.5 req/s from 5,000 requests, 36.2-36.6 from 2,000). If that run never preempts nor
#    fills the KV cache past KV_FULL, lighter traffic cannot either: the service rate is the
#    saturated rate, within about 1 % (20,000-request runs keep up at 36.0 and climb at 37.0),
#    capped by what the API server sustains (`RunSummary.api_server_ceiling`): overloaded, it
#    takes requests in ahead of the tokens it streams, so a full queue's completions bunch and read
#    more (3B, 128/32 lognormal: 468 req/s; the API server's 434 keep up, 445 fall behind).
# 2. If the full queue preempts (the KV cache, not the seats, bounds the batch), a full queue
#    thrashes and serves less than lighter traffic can sustain, and which rates keep up is a
#    matter of time: a fluctuation that fills the cache tips the replica into the thrashing state,
#    from which it does not recover while traffic stays above the full queue's rate. The rate is
#    then searched on runs of the horizon: stepped by SUSTAIN_STEP from the full queue's rate
#    until one run keeps up and one does not, then bisected to SUSTAIN_PRECISION.
#    So it is when the full queue serves less than the burst (`Saturation.degraded`): overloaded,
#    the API server (`sim/frontend.py`) takes requests in ahead of the tokens it streams (Llama 3.2
#    1B, H100, 32 seats, 64/16: full queue 726 req/s, burst 769, 20,000 at 762 keep up).
#    The search starts from the API server's ceiling where that caps the full queue's rate, and
#    is made all the same: a thrashing replica can fall behind at the ceiling (the 3B, 128/32
#    above with 3,000 KV blocks: full queue 455 req/s, ceiling 434, 428 fall behind, 425 keep up).
#    It never tries a rate above the ceiling, and stops at the ceiling once that keeps up: the
#    ceiling is the API server's own work per request with each serial server busy all the time,
#    so traffic faster than it queues in front of the engine without bound, by (rate - ceiling)
#    requests a second. A run of the horizon cannot always show that: 1 % past the ceiling, E2E
#    climbs by less than 1 % of the time elapsed, within SUSTAIN_SLOPE, so `keeps_up` alone lets
#    the bisection settle above the ceiling (Llama 3.2 1B, H100, 32 seats, 64/24: ceiling 588.2
#    req/s, a full queue 563.4; 20,000 requests at 588.6 climb 0.0097 s a second and passed). The
#    saturated rate is at most the ceiling, searched or not.
# 3. So it is, too, when two overloaded runs disagree (`Saturation.lockstep`): the first offer read
#    a service rate too near it (the margin above) yet fell behind it (by more than
#    SUSTAIN_PRECISION: its queue stood, shallow), and the one offered twice as much, its queue
#    deeper, serves less than the first completed (by more than SUSTAIN_PRECISION). A first run
#    that kept up says nothing of a full queue: its completions read its offer, give or take the
#    2-3 % that 5,000-request runs spread by (Llama 3.1 8B, 32 seats, 512/256, six seeds: offered
#    15.4 req/s, 15.41-15.53 completed; offered 30.8, 15.25-15.47 served). A full queue's
#    rate is then a property of how deep the queue stands, not of the engine, and steady traffic,
#    whose queue stays shallow, can sustain more than the deep one serves. With fixed lengths and
#    the seats binding, a deep queue refills every seat the step it frees: the requests admitted
#    together finish together, so admissions come in waves that steady traffic never locks into
#    (Llama 3.1 8B, H100, 64 seats, 64/16: offered 412 req/s, the middle half of the completions
#    reads 386.6 with 4.0 first tokens a step that has any (at most 9); offered 824, 358.3 with 7.1
#    (up to 15); 20,000 requests at 376 keep up with 3.7 a step, at 394 they fall behind).
OVERLOAD = 1.25
OVERLOAD_PROMPTS = 5000
KV_FULL = 0.95
SUSTAIN_STEP = 0.06
SUSTAIN_PRECISION = 0.01
SUSTAIN_MAX_RUNS = 16


def within_ceiling(rate: float, ceiling: float) -> float:
    """`rate`, or the API server's `ceiling` (`Saturation.api_server_rate`) when it is above it:
    no rate above the ceiling is sustained (2. above), so no search tries one, the saturated
    rate's (`saturation`) and the plan's (`sim.rate_plan.plan_rate`) alike."""
    return min(rate, ceiling)


def overload_prompts(scenario: Scenario, least: int) -> int:
    """Requests of the overloaded run `saturation` makes for this scenario: `least` under
    continuous batching, whose full queue admits requests one by one as seats free, staggered as
    steady traffic is (a burst starts them all in step, a pattern steady traffic never shows); 0
    under static, dynamic or sequential batching, whose batches start together whatever the
    arrivals, so that a burst's rate is their full queue's."""
    return least if scenario.engine_config().batching == "continuous" else 0


def service_rate(summary: RunSummary) -> float:
    """Requests/s a run completed over the middle half of its completions (0 when it completed
    fewer than 8): in an overloaded run, the rate the engine serves with a full queue."""
    cols = Columns.of(summary.records)
    if len(cols) < 8:
        return 0.0
    finish = np.sort(cols["arrival_time"] + cols["e2e"])
    lo, hi = len(finish) // 4, 3 * len(finish) // 4
    span = float(finish[hi] - finish[lo])
    return (hi - lo) / span if span > 0 else 0.0


@dataclass
class Saturation:
    """A replica's saturated rate and how it was found (`saturation`)."""

    rate: float
    """Requests/s: the highest rate found to keep up over `horizon` requests (the service rate
    with a full queue when that queue never preempts), never above `api_server_rate`."""
    backlog: RunSummary
    """Every request queued at once: what the engine completes when never short of work, from a
    standing start (vLLM's --request-rate inf)."""
    overload: RunSummary
    """Traffic at OVERLOAD times the backlog's rate, its queue full for most of the run."""
    full_queue_rate: float
    """`service_rate` of the overloaded run."""
    thrashes: bool
    """The full queue preempts (or fills the KV cache): the rate was searched on long runs."""
    horizon: int = SUSTAIN_REQUESTS
    searched: list = field(default_factory=list)
    """(rate, kept up, E2E slope) of each run of the search, in the order run."""
    exact: bool = True
    """False when the search was skipped (`saturation(search=False)`, thrashing, degraded or lockstep):
    `rate` is then the full queue's rate, a lower bound."""
    degraded: bool = False
    """The full queue serves less than the burst completed (by more than SUSTAIN_PRECISION): the
    rate was searched on long runs, as for a thrashing one."""
    lockstep: bool = False
    """A deeper full queue served less than a shallower one (the overloaded run offered twice as
    much as a first that read a rate too near its offer and fell behind it): the rate was searched
    on long runs."""
    api_server_rate: float = math.inf
    """What the API servers sustain (the overloaded run's `api_server_ceiling`): the rate's cap."""

    @property
    def above(self) -> float | None:
        """The lowest rate the search saw fall behind (None without a search)."""
        missed = [r for r, ok, _ in self.searched if not ok]
        return min(missed) if missed else None

    @property
    def output_throughput(self) -> float:
        """Output tokens/s at the saturated rate (its mean output length from the overloaded run)."""
        m = self.overload.metrics
        mean_out = m["output_throughput"] / m["request_throughput"] if m["request_throughput"] else 0.0
        return self.rate * mean_out


def saturation(run_at: RunAt, num_prompts: int, *, overload_prompts: int = OVERLOAD_PROMPTS,
               horizon: int = SUSTAIN_REQUESTS, search: bool = True) -> Saturation:
    """The saturated rate of the traffic `run_at` runs: `num_prompts` requests queued at once
    first (the scale), then `overload_prompts` (at least `num_prompts`) arriving at OVERLOAD times
    their rate, then, if that full queue preempts and `search`, the search on runs of `horizon`
    requests (see above). `overload_prompts` 0 (`overload_prompts()` for a scenario whose batches
    all start together: static, dynamic, sequential): the burst's rate is the saturated rate."""
    backlog = run_at(math.inf, num_prompts)
    base = backlog.metrics["request_throughput"]
    if base <= 0 or not overload_prompts:  # nothing completes (every request refused), or a batch
        # policy that starts every batch anew, which a burst measures as a full queue does
        return Saturation(max(base, 0.0), backlog, backlog, max(base, 0.0), False, horizon)
    offered = OVERLOAD * base
    n = max(num_prompts, overload_prompts)
    shallower = 0.0  # what the last offer too near the service rate completed, if it fell behind
    for _ in range(3):
        overload = run_at(offered, n)
        served = service_rate(overload)
        if served < offered / math.sqrt(OVERLOAD):  # the queue stayed full: served is the engine's
            break
        shallower = served if served * (1 + SUSTAIN_PRECISION) < offered else 0.0
        offered *= 2  # it kept up: the burst read far below what the engine serves
    else:  # too few requests to keep a queue standing: the burst is all there is to go by
        served = shallower = base
    m = overload.metrics
    thrashes = bool(m["num_preemptions"]) or m.get("peak_kv_usage", 0.0) > KV_FULL
    overload = replace(overload, records=[])  # read by figures only through its metrics
    sat = Saturation(served, backlog, overload, served, thrashes, horizon)
    sat.api_server_rate = overload.api_server_ceiling
    sat.rate = within_ceiling(served, sat.api_server_rate)
    sat.degraded = not thrashes and served * (1 + SUSTAIN_PRECISION) < base
    sat.lockstep = not (thrashes or sat.degraded) and served * (1 + SUSTAIN_PRECISION) < shallower
    if not (thrashes or sat.degraded or sat.lockstep):
        return sat
    if not search:
        sat.exact = False
        return sat

    def tried(rate: float) -> bool:
        ok, slope = keeps_up(run_at(rate, horizon))
        sat.searched.append((rate, ok, slope))
        return ok

    lo = hi = None
    rate = sat.rate
    ceiling = sat.api_server_rate
    while len(sat.searched) < SUSTAIN_MAX_RUNS and (lo is None or hi is None):
        if tried(rate):
            lo = rate
            if rate >= ceiling:  # no rate above the API server's ceiling is sustained (see above)
                break
            rate = within_ceiling(rate * (1 + SUSTAIN_STEP), ceiling)
        else:
            hi = rate
            rate /= 1 + SUSTAIN_STEP
    while lo is not None and hi is not None and hi / lo - 1 > SUSTAIN_PRECISION and len(sat.searched) < SUSTAIN_MAX_RUNS:
        mid = math.sqrt(lo * hi)
        if tried(mid):
            lo = mid
        else:
            hi = mid
    sat.rate = lo if lo is not None else min(r for r, _, _ in sat.searched)
    return sat


SWEEPS_REMEMBERED = 8
"""Rate sweeps a process keeps (`rate_sweep`), the most recently used."""

POINTS_REMEMBERED = 16
"""Steady points and saturations a process keeps (`steady_point`, `saturated_point`), each (a
saturation keeps its burst of 2,000 requests with their records, about half a megabyte)."""

_swept = Remembered(SWEEPS_REMEMBERED)
_steady = Remembered(POINTS_REMEMBERED)
_saturated = Remembered(POINTS_REMEMBERED)


def rate_sweep(scenario: Scenario, rates: Sequence[float], *, num_prompts: int = 0,
               saturation_prompts: int = 2000, **kwargs) -> tuple[float, list[RatePoint]]:
    """The saturated rate of `scenario` (`saturated_point` with `saturation_prompts`: the one the
    lessons' figures read) and each of `rates` measured at its steady state.

    A sweep is a pure function of its arguments, and a few seconds of CPU: the process keeps the
    last SWEEPS_REMEMBERED (`Remembered`). A learner who comes back to a step with a curve (or
    flips past it, starting its sweep each time) and step 16's drill, which sweeps the curve at
    each number of seats it asks about, get a sweep already measured. Sweeps given a callable
    (`enough`) are not kept."""
    if any(callable(value) for value in kwargs.values()):
        return _rate_sweep(scenario, rates, num_prompts, saturation_prompts, kwargs)
    key = (tuple(float(r) for r in rates), num_prompts, saturation_prompts, tuple(sorted(kwargs.items())))
    saturated, points = _swept.get(scenario, key, lambda: _rate_sweep(scenario, rates, num_prompts,
                                                                      saturation_prompts, kwargs))
    return saturated, list(points)


def saturated_point(scenario: Scenario, num_prompts: int, *, search: bool = True) -> Saturation:
    """`saturation` of the scenario's traffic, `num_prompts` requests queued at once, then at least
    OVERLOAD_PROMPTS overloading it (`search`: as `saturation`'s); the process keeps the last
    POINTS_REMEMBERED (a figure, a curve and a drill that read the same scenario, or a lesson
    opened again, measure it once; a search is not made again for a saturation found exactly
    without one)."""
    def measure(search: bool) -> Saturation:
        return saturation(runner(scenario), int(num_prompts), search=search,
                          overload_prompts=overload_prompts(scenario, max(int(num_prompts), OVERLOAD_PROMPTS)))

    quick = _saturated.get(scenario, ("saturated", int(num_prompts), False), lambda: measure(False))
    if quick.exact or not search:
        return quick
    return _saturated.get(scenario, ("saturated", int(num_prompts), True), lambda: measure(True))


def steady_point(scenario: Scenario, rate: float, *, saturated: float | None = None,
                 min_window: int = STEADY_MIN_REQUESTS) -> RatePoint:
    """`measure_rate` of the scenario's traffic at `rate`; the process keeps the last
    POINTS_REMEMBERED, as `saturated_point` does."""
    return _steady.get(scenario, ("steady", float(rate), saturated, int(min_window)),
                       lambda: measure_rate(runner(scenario), float(rate), saturated=saturated,
                                            min_window=int(min_window)))


def _rate_sweep(scenario: Scenario, rates: Sequence[float], num_prompts: int, saturation_prompts: int,
                kwargs: dict) -> tuple[float, list[RatePoint]]:
    run_at = runner(scenario)
    saturated = saturated_point(scenario, saturation_prompts).rate
    points = []
    warmup = 0.0
    for rate in rates:
        point = measure_rate(run_at, float(rate), num_prompts=num_prompts, saturated=saturated,
                             warmup_hint=warmup, **kwargs)
        warmup = point.extra["warmup"]
        points.append(point)
    return saturated, points
