"""Throughput against latency: one request rate measured at its steady state, the saturated rate,
and where a curve bends (its knee). One definition of each, shared by the lessons' curves,
`batchtui sweep` and `batchtui plan`, so no two screens can disagree about them.

A rate has a steady state only below what the engine sustains. Above it the queue grows for as
long as requests keep coming: a run's TTFT then measures the run's length, not the rate, so such
a point is reported as unbounded instead of with a latency that a longer run would contradict.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .engine import RunSummary, run_scenario
from .scenario import Scenario

__all__ = [
    "BACKLOG_SLOPE", "Columns", "at_rate", "KNEE_LATENCY_FACTOR", "Knee", "RatePoint", "STEADY_MAX_REQUESTS",
    "STEADY_MIN_REQUESTS", "find_knee", "latency_percentiles", "measure_rate", "rate_sweep",
    "runner", "saturated_point", "saturated_rate", "steady_point", "steady_window", "Remembered",
]

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

# A replica keeps up when, over the steady window, end-to-end latency does not climb with the
# arrival time: a least-squares slope of E2E against arrival above BACKLOG_SLOPE (seconds of
# latency gained per second of arrivals) means requests finish slower than they arrive -- the
# backlog grows, or the batch is still growing towards a steady state the run never reached.
# Either way the run cannot vouch for that rate.
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


def saturated_rate(run_at: RunAt, num_prompts: int) -> RunSummary:
    """The run with every request queued at once; its request throughput is the saturated rate."""
    return run_at(math.inf, num_prompts)


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
    """Run `rate` until its steady window holds `min_window` requests (or `max_requests` were
    run) and judge whether it settles.

    A rate at or above `saturated` (the request throughput with everything queued at once) has
    no steady state; nor has one whose end-to-end latency climbs with the arrival time by more
    than BACKLOG_SLOPE. `warmup_hint` (a previous point's warm-up, seconds) sizes the first run so
    it rarely has to be repeated. `enough(summary)` may stop the growing early (the plan stops
    once the whole run already misses its SLO: a longer run would miss it too)."""

    def needed(warmup: float) -> int:
        # Arrivals must span the warm-up, the cool-down and the window itself.
        if not math.isfinite(rate):
            return max(num_prompts, min_window)
        return math.ceil(1.2 * (rate * 2 * warmup + min_window))

    above = saturated is not None and math.isfinite(rate) and rate >= saturated
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
    if above:
        point.bounded = False
        point.note = (f"{rate:g} req/s is at or above the saturated rate ({saturated:.2f} req/s): "
                      "the queue grows without bound")
    elif stats["e2e_slope"] > BACKLOG_SLOPE:
        point.bounded = False
        point.note = (f"the run does not settle (E2E climbs {stats['e2e_slope'] * 1000:.0f} ms per "
                      "second of arrivals)")
    return point


class Remembered:
    """The last `size` results of a pure, costly measurement of a scenario, kept per process.

    Keyed by the scenario's repr and the other arguments (a scenario equal to the one kept is
    required too: two scenarios may print alike) and by the size and modification time of each
    file the scenario reads (profiles, a model's config, a trace or dataset: one edited since is
    measured again); a result being measured in another thread is waited for, not measured
    twice; a failed measurement is not kept. Results are shared: their readers must not change
    them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict[tuple, tuple[Scenario, object]] = OrderedDict()
        self._pending: dict[tuple, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, scenario: Scenario, key: tuple, measure: Callable[[], object]):
        key = (repr(scenario), _files_read(scenario)) + key
        while True:
            with self._lock:
                kept = self._kept.get(key)
                if kept is not None and kept[0] == scenario:
                    self._kept.move_to_end(key)
                    return kept[1]
                pending = self._pending.get(key)
                if pending is None:
                    pending = self._pending[key] = threading.Event()
                    break
            pending.wait()  # another thread is measuring it (or one with the same repr): look again
        try:
            result = measure()
            with self._lock:
                self._kept[key] = (scenario, result)
                self._kept.move_to_end(key)
                while len(self._kept) > self.size:
                    self._kept.popitem(last=False)
        finally:
            with self._lock:
                del self._pending[key]
            pending.set()
        return result



def _files_read(scenario: Scenario) -> tuple:
    """(path, size, modification time) of each file the scenario reads; None for one missing."""
    w = scenario.workload
    out = []
    for path in (scenario.profiles_path, scenario.hf_config_path, w.trace_path, w.dataset_path):
        if path:
            try:
                st = os.stat(path)
            except OSError:
                out.append((path, None))
            else:
                out.append((path, st.st_size, st.st_mtime_ns))
    return tuple(out)


SWEEPS_REMEMBERED = 8
"""Rate sweeps a process keeps (`rate_sweep`), the most recently used."""

POINTS_REMEMBERED = 16
"""Steady points and saturated runs a process keeps (`steady_point`, `saturated_point`), each (a
saturated run of 2,000 requests with its records is about half a megabyte)."""

_swept = Remembered(SWEEPS_REMEMBERED)
_steady = Remembered(POINTS_REMEMBERED)
_saturated = Remembered(POINTS_REMEMBERED)


def rate_sweep(scenario: Scenario, rates: Sequence[float], *, num_prompts: int = 0,
               saturation_prompts: int = 2000, **kwargs) -> tuple[float, list[RatePoint]]:
    """The saturated rate of `scenario` and each of `rates` measured at its steady state.

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


def saturated_point(scenario: Scenario, num_prompts: int) -> RunSummary:
    """`saturated_rate` of the scenario's traffic, `num_prompts` requests queued at once; the
    process keeps the last POINTS_REMEMBERED (a figure and a drill that read the same scenario,
    or a lesson opened again, measure it once)."""
    return _saturated.get(scenario, ("saturated", int(num_prompts)),
                          lambda: saturated_rate(runner(scenario), int(num_prompts)))


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
    saturated = saturated_rate(run_at, saturation_prompts).metrics["request_throughput"]
    points = []
    warmup = 0.0
    for rate in rates:
        point = measure_rate(run_at, float(rate), num_prompts=num_prompts, saturated=saturated,
                             warmup_hint=warmup, **kwargs)
        warmup = point.extra["warmup"]
        points.append(point)
    return saturated, points
