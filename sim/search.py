"""The pure parts of `batchtui search`: the grid of deployments (GPU, tensor-parallel size, dials),
each point's scenario and key, a point's screening and confirmation (the same search and
confirmation `batchtui plan` runs, from `sim.rate_plan`, only with shorter runs and one seed to
screen), the replicas of the best points checked behind a router as plan checks them
(`router_point`), and what a point costs and yields: replicas for a peak (checked, else
`sim.planning.replicas_needed`), GPUs, cost per hour and per million output tokens, and the Pareto front of tokens/s per GPU
against tokens/s per user.

Every run of a point depends only on the point, the workload, the SLO and the seed: the same
seeds for every point (common random numbers: each deployment sees the same requests, so the
differences between points are the deployments'), and nothing of the order or the worker that
runs it. Standard library and numpy only.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, replace

from sim import planning, rate_plan
from sim.errors import SimError
from sim.planning import Slo

__all__ = ["GridPoint", "PointResult", "SCREEN_PRECISION", "SCREEN_PROMPTS", "SCREEN_WINDOW", "SCREEN_WINDOW_S",
           "ScreenProof", "confirm_point", "context_key", "cost", "family", "grid", "grid_dials", "loosest_first",
           "pareto_front", "point_key", "point_scenario", "run_unit", "screen_proved", "spec_text", "spec_word",
           "spread", "survivors"]

# The screen: plan's search (`sim.rate_plan.plan_rate`) on one seed with short runs and a coarse
# precision; only the points it keeps are searched and confirmed as `plan` does.
SCREEN_PROMPTS = 300
SCREEN_WINDOW = 100
SCREEN_WINDOW_S = 8.0
SCREEN_PRECISION = 0.04
CONFIRM_BEST = 4  # the cheapest screened points confirmed, besides the screened Pareto front


@dataclass(frozen=True, order=True)
class GridPoint:
    """One deployment of the grid: a GPU type, a tensor-parallel size and the dials searched."""

    gpu: str
    tensor_parallel_size: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_dtype: str
    enable_prefix_caching: bool
    enable_expert_parallel: bool = False
    """A mixture of experts' experts placed whole on the GPUs (`--enable-expert-parallel`)."""
    speculative_config: str = ""
    """vLLM's `--speculative-config` JSON in one spelling (`spec_text`); "" for none."""

    @property
    def parallel(self) -> str:
        """How the GPUs share the model: "tp8", or "tp8 ep" with expert parallelism."""
        return f"tp{self.tensor_parallel_size}" + (" ep" if self.enable_expert_parallel else "")

    @property
    def spec(self) -> str:
        """The speculative config in a word: "eagle3 k3", or "none"."""
        return spec_word(self.speculative_config)

    def label(self) -> str:
        return (f"{self.gpu} {self.parallel} seqs {self.max_num_seqs} "
                f"tokens {self.max_num_batched_tokens} kv {self.kv_cache_dtype} "
                f"cache {'on' if self.enable_prefix_caching else 'off'}"
                + (f" spec {self.spec}" if self.speculative_config else ""))


def loosest_first(points: Sequence[GridPoint]) -> list[GridPoint]:
    """The points in the order to screen them so that a `ScreenProof` is most often at hand for
    the points it covers: the most seats first, then the largest token budget, else as given (the
    loosest caps are the ones a screen's runs leave unreached, and a point's peak is below them)."""
    return sorted(points, key=lambda p: (-p.max_num_seqs, -p.max_num_batched_tokens))


def spec_text(config) -> str:
    """A `--speculative-config` (JSON text or a dict) checked (`sim.speculative.parse`:
    ConfigError for one vLLM refuses) and spelled one way (keys sorted, no spaces), so that one
    config is one grid point and one journal key however it was typed; "" for none."""
    from .speculative import parse

    if parse(config) is None:
        return ""
    data = json.loads(config) if isinstance(config, str) else config
    return json.dumps({str(k).replace("-", "_"): v for k, v in data.items()}, sort_keys=True, separators=(",", ":"))


def spec_word(config: str) -> str:
    """A speculative config in a word for a table: its method and K ("eagle3 k3"), or "none"."""
    if not config:
        return "none"
    data = json.loads(config)
    return f"{data.get('method') or data.get('model')} k{data.get('num_speculative_tokens')}"


def grid(gpus: Sequence[str], tensor_parallel_sizes: Sequence[int], max_num_seqs: Sequence[int],
         max_num_batched_tokens: Sequence[int], kv_cache_dtypes: Sequence[str],
         prefix_caching: Sequence[bool], expert_parallel: Sequence[bool] = (False,),
         speculative_configs: Sequence[str] = ("",)) -> list[GridPoint]:
    """Every combination, in the order given (GPU slowest, speculative config fastest). Expert
    parallelism is a choice only for a point of several GPUs (on one, the experts are whole
    anyway). `speculative_configs` are `spec_text` spellings ("" for none)."""
    return [GridPoint(*combo) for combo in itertools.product(
        gpus, tensor_parallel_sizes, max_num_seqs, max_num_batched_tokens, kv_cache_dtypes, prefix_caching,
        expert_parallel, speculative_configs) if combo[1] > 1 or not combo[6]]


def grid_dials(base, profiles, gpu: str, max_num_seqs: Sequence[int] | None = None,
               max_num_batched_tokens: Sequence[int] | None = None) -> tuple[list[int], list[int]]:
    """The seats and token budgets searched on `gpu`: the values given (`--max-num-seqs-values`,
    `--max-num-batched-tokens-values`), else the one the base scenario runs on that GPU: its own
    where it sets the dial (a flag, a scenario file), else vLLM's default for that GPU
    (`Scenario.engine_dials`, as `batchtui sim --gpu` takes it: an A100 or L40S 256 seats and
    2,048 tokens where an H100 has 1,024 and 8,192; for an offline base, `Scenario.offline`, the
    LLM class's, as `plan --offline` takes them: 8,192 and 16,384 tokens)."""
    dials = replace(base, gpu=gpu).engine_dials(profiles)
    return (list(max_num_seqs or [dials["max_num_seqs"]]),
            list(max_num_batched_tokens or [dials["max_num_batched_tokens"]]))


def point_scenario(base, point: GridPoint):
    """The base scenario (workload, model, other dials, seed) deployed as `point` says."""
    sc = replace(base, gpu=point.gpu, tensor_parallel_size=point.tensor_parallel_size,
                 kv_cache_dtype=point.kv_cache_dtype,
                 enable_expert_parallel=True if point.enable_expert_parallel else None,
                 speculative_config=point.speculative_config or None)
    return sc.with_engine(max_num_seqs=point.max_num_seqs, max_num_batched_tokens=point.max_num_batched_tokens,
                          enable_prefix_caching=point.enable_prefix_caching)


def context_key(base, slo: Slo | None, offline: int | None, settings: dict) -> str:
    """What every point of one search shares (the scenario less the grid's dials, the SLO, the
    search's settings), hashed: a result is reused only under the same context."""
    data = {"scenario": base.to_dict(), "slo": None if slo is None else asdict(slo), "offline": offline,
            "settings": settings}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def point_key(point: GridPoint, context: str, stage: str) -> str:
    """A point's result's key in the journal: its context, stage and every setting (a point
    without speculative decoding keyed as before that axis, so older journals still serve)."""
    settings = asdict(point)
    if not point.speculative_config:
        del settings["speculative_config"]
    return f"{context}:{stage}:" + json.dumps(settings, sort_keys=True, separators=(",", ":"))


# -- what a point yields -------------------------------------------------------------------------

@dataclass
class PointResult:
    """One point after a stage: its SLO rate and what was measured there, or why it has none."""

    point: GridPoint
    stage: str  # "screen", "confirm", "router" (a confirmed point's replicas checked) or "offline"
    feasible: bool
    rate: float | None = None
    """The highest rate (req/s) meeting the SLO; for --offline, the job's request throughput."""
    saturated_rate: float | None = None
    reason: str = ""
    """Why the point has no rate: the deployment cannot run, or no rate meets the SLO."""
    runnable: bool = True
    """False when the deployment cannot run at all (the model does not fit, ...)."""
    mean_output_len: float = 0.0
    median_tpot_ms: float = 0.0
    p99_ttft_ms: float = 0.0
    p99_tpot_ms: float = 0.0
    runs: int = 0
    """Simulator runs this point's stage made."""
    seeds: list[int] = field(default_factory=list)
    replicas: int | None = None
    """The replicas that meet the SLO at the peak behind a router (stage "router"; None before)."""
    job_s: float | None = None
    """For --offline, the job's time (s): from the requests queued to the last token out."""

    @property
    def output_throughput(self) -> float:
        """Output tokens/s one replica serves at its SLO rate."""
        return (self.rate or 0.0) * self.mean_output_len

    @property
    def tokens_per_gpu(self) -> float:
        return self.output_throughput / self.point.tensor_parallel_size

    @property
    def tokens_per_user(self) -> float:
        """Output tokens/s a user sees at the SLO rate (1 / median TPOT)."""
        return 1000.0 / self.median_tpot_ms if self.median_tpot_ms > 0 else 0.0

    def to_json(self) -> dict:
        d = asdict(self)
        d["point"] = asdict(self.point)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "PointResult":
        """The result `to_json` wrote. ValueError when `d` is not one: a field missing or
        unknown, or a value not of its field's type (a journal line from elsewhere)."""
        _checked(GridPoint, d.get("point") if isinstance(d, dict) else None)
        return cls(**{**_checked(cls, d), "point": GridPoint(**d["point"])})


_JSON_TYPES = {"str": (str,), "bool": (bool,), "int": (int,), "float": (int, float), "None": (type(None),),
               "list[int]": (list,), "GridPoint": (dict,)}


def _checked(cls, d) -> dict:
    """`d` when it holds every field of the dataclass `cls` that has no default, no other key,
    and each value of the type its field declares (as JSON gives it: a float may be written as
    an integer); else ValueError."""
    if not isinstance(d, dict):
        raise ValueError(f"not a {cls.__name__}: {type(d).__name__}")
    known = {f.name: f for f in fields(cls)}
    for name in d.keys() - known.keys():
        raise ValueError(f"unknown field {name!r}")
    for name, f in known.items():
        if name not in d:
            if f.default is MISSING and f.default_factory is MISSING:
                raise ValueError(f"missing field {name!r}")
            continue
        value = d[name]
        allowed = tuple(t for part in str(f.type).split(" | ") for t in _JSON_TYPES[part])
        if (not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed)
                or (f.type == "list[int]" and not all(type(v) is int for v in value))):
            raise ValueError(f"field {name!r} is {value!r}, not {f.type}")
    return d


def _from_window(point: GridPoint, stage: str, rate: float, saturated: float, window: dict, runs: int,
                 seeds: list[int]) -> PointResult:
    return PointResult(point, stage, True, rate, saturated, "", True, window["mean_output_len"],
                       window["median_tpot_ms"], window["p99_ttft_ms"], window["p99_tpot_ms"], runs, seeds)


class _Counting:
    """A run_at that counts its runs and keeps how near each came to its caps (`RunSummary.caps`)."""

    def __init__(self, run_at) -> None:
        self.run_at = run_at
        self.runs = 0
        self.caps: list = []

    def __call__(self, rate: float, num_prompts: int):
        self.runs += 1
        summary = self.run_at(rate, num_prompts)
        self.caps.append(summary.caps)
        return summary


def family(point: GridPoint) -> GridPoint:
    """What a point shares with the points that differ from it only in their seats and token
    budget: the point with both set to 0 (a `ScreenProof` serves only its own family)."""
    return replace(point, max_num_seqs=0, max_num_batched_tokens=0)


@dataclass(frozen=True)
class ScreenProof:
    """A point's screen, with what proves it for another point of its family: the dials it ran
    under, how near each of its runs came to the seat and token caps (`RunSummary.caps`, the
    engine's own record) and the GPU's CUDA graph ceiling. Plan's search is deterministic: when
    every run would run the same under the other point's dials (`sim.config.caps_cover`), so does
    the first, hence the rate of the second, and so on: the other point's screen is this one's."""

    result: PointResult
    config: object  # sim.config.EngineConfig
    caps: tuple
    ceiling: int

    def covers(self, point: GridPoint, config) -> bool:
        from .config import caps_cover

        return family(point) == family(self.result.point) and all(
            caps_cover(c, self.config, config, self.ceiling) for c in self.caps)


def _run_at(scenario):
    from sim.curves import runner

    return runner(scenario, keep_requests=False, api_server=True)


def cannot_run(scenario, profiles, say=str) -> str | None:
    """Why this deployment cannot serve at all (the model does not fit, max_model_len beyond the
    KV cache, a dial vLLM refuses), in the words `say` gives the simulator's error (the command
    line's: each dial by its flag); None when it can."""
    from sim.engine import Engine
    from sim.workload import WorkloadSpec

    idle = replace(scenario, workload=WorkloadSpec(arrival="all-at-once", num_prompts=0))
    try:
        Engine(idle, profiles=profiles, keep_requests=False, api_server=True)
    except SimError as exc:
        return say(exc)
    refusal = scenario.override_refusal(profiles)
    return None if refusal is None else say(refusal)


def screen_proved(base, point: GridPoint, slo: Slo, num_prompts: int = SCREEN_PROMPTS,
                  min_window: int = SCREEN_WINDOW, min_window_s: float = SCREEN_WINDOW_S,
                  precision: float = SCREEN_PRECISION, say=str,
                  proofs: Sequence[ScreenProof] = ()) -> tuple[PointResult, ScreenProof | None, bool]:
    """Plan's search (`rate_plan.plan_rate`) on the base seed with short runs: a rough SLO rate
    (`say`: see `cannot_run`); its `ScreenProof` (None when it ran nothing new, or with speculative
    decoding), and whether one of `proofs` covered it: that screen is then its screen, not run
    again (and a point a proof covers covers nothing that proof does not)."""
    sc = point_scenario(base, point)
    profiles = sc.profiles()
    why = cannot_run(sc, profiles, say)
    if why is not None:
        return PointResult(point, "screen", False, reason=why, runnable=False), None, False
    config = sc.engine_config(profiles)
    for proof in proofs if not point.speculative_config else ():
        if proof.covers(point, config):
            return replace(proof.result, point=point), None, True
    run_at = _Counting(_run_at(sc))
    plan = rate_plan.plan_rate(run_at, slo, num_prompts, precision=precision, min_window=min_window,
                               min_window_s=min_window_s)
    if not plan.feasible:
        closest = plan.closest
        result = PointResult(point, "screen", False, None, plan.saturated_rate,
                             "no rate meets the SLO: at " f"{closest.rate:.2f} req/s " + "; ".join(closest.misses),
                             runs=run_at.runs, seeds=[sc.seed])
    else:
        result = _from_window(point, "screen", plan.best.rate, plan.saturated_rate, plan.best.window, run_at.runs,
                              [sc.seed])
    proved = not point.speculative_config and None not in run_at.caps
    return result, ScreenProof(result, config, tuple(run_at.caps),
                               sc.deployment(profiles).gpu.cudagraph_ceiling) if proved else None, False


def run_unit(unit: tuple):
    """One unit of a point's confirmation or router check (`confirm_point`, `router_point`), by
    its first word: ("run", scenario, rate, n), the scenario's run at that rate and length with
    its per-request records (plan's search judges each rate's steady window from them);
    ("confirm", scenario, slo, rate, saturated, n, min_window, min_window_s),
    `rate_plan.confirm_point` on the scenario, its per-request records dropped (the rate is judged),
    and the runs it made; ("router", scenario, policy, replicas, peak_rate, slo, n),
    `rate_plan.check_router`. A unit's answer depends only on the unit: where it runs (this
    process, or a worker `batchtui search` hands it to) changes nothing."""
    kind, scenario, *rest = unit
    if kind == "run":
        rate, n = rest
        return _run_at(scenario)(rate, n)
    if kind == "confirm":
        slo, rate, saturated, n, min_window, min_window_s = rest
        run_at = _Counting(_run_at(scenario))
        point = rate_plan.confirm_point(run_at, slo, rate, saturated, n, min_window, min_window_s)
        return replace(point, summary=replace(point.summary, records=[])), run_at.runs
    if kind == "router":
        policy, replicas, peak_rate, slo, n = rest
        return rate_plan.check_router(scenario, scenario.profiles(), policy, replicas, peak_rate, slo, n)
    raise ValueError(f"unknown unit {kind!r}")


def confirm_point(base, point: GridPoint, slo: Slo, num_prompts: int, seeds: int, min_window: int,
                  min_window_s: float, confirm_prompts: int,
                  new_seeds: int = rate_plan.PLAN_CONFIRM_NEW_SEEDS, run=run_unit) -> PointResult:
    """A screened point searched and confirmed as `batchtui plan` does it: plan's search
    (`rate_plan.plan_rate`) on `seeds` seeds from the scenario's, with windows of `min_window`
    requests and `min_window_s` seconds; the lowest seed's answer confirmed by
    `rate_plan.confirm_rate` on runs of `confirm_prompts` requests on those seeds and `new_seeds`
    more (plan's defaults are rate_plan's PLAN_* constants), one at a time: a rate's runs stop
    once its verdict is known (`seeded_plan`'s `batch`). Each run of the search and each
    confirmation run is a unit (`run_unit`) made by `run`: in this process by default, by a worker
    when the command hands them out one by one (the same units, so the same answer)."""
    sc = point_scenario(base, point)
    runs = 0

    def plan_seeds(scenarios) -> list:
        nonlocal runs
        plans = []
        for x in scenarios:
            run_at = _Counting(lambda rate, n, x=x: run(("run", x, rate, n)))
            plans.append(rate_plan.plan_rate(run_at, slo, num_prompts, min_window=min_window,
                                             min_window_s=min_window_s))
            runs += run_at.runs
        return plans

    def confirm_seeds(scenarios, rate: float, saturated: float) -> list:
        nonlocal runs
        points = []
        for x in scenarios:
            p, made = run(("confirm", x, slo, rate, saturated, confirm_prompts, min_window, min_window_s))
            points.append(p)
            runs += made
        return points

    result = rate_plan.seeded_plan(sc, seeds, plan_seeds, confirm_seeds, new_seeds, batch=1)
    if not all(p.feasible for p in result.plans):
        bad = result.limiting
        return PointResult(point, "confirm", False, None, result.saturated_rate,
                           f"no rate meets the SLO on seed {result.seeds[result.plans.index(bad)]}", runs=runs,
                           seeds=result.seeds)
    if not result.feasible:
        rate, _ = result.confirm_tries[-1]
        return PointResult(point, "confirm", False, None, result.saturated_rate,
                           f"the seeds' answer did not hold on longer runs down to {rate:.2f} req/s",
                           runs=runs, seeds=result.confirm_seeds)
    worst = _worst(result.confirm_points)
    return _from_window(point, "confirm", result.rate, result.saturated_rate, worst, runs, result.confirm_seeds)


def router_point(base, result: PointResult, slo: Slo, peak_rate: float, headroom: float,
                 min_seconds: float, min_per_replica: int, max_extra: int, run=run_unit,
                 run_all=None) -> PointResult:
    """A confirmed point's replicas for the peak checked as `batchtui plan` checks them
    (`rate_plan.replicas_for_peak`: from `sim.planning.replicas_needed` up, the peak spread over
    them by every router policy must meet the SLO): the result with `replicas` set, or infeasible
    when even `max_extra` more replicas miss. A peak too large to simulate is left unchecked. Each
    check is a unit (`run_unit`) made by `run` (see `confirm_point`), a count's checks (one for
    each router policy, independent) by `run_all(units)` when given (a list of their answers, in
    order: workers may make them side by side)."""
    from .limits import MAX_NUM_PROMPTS

    sc = point_scenario(base, result.point)
    first = planning.replicas_needed(peak_rate, result.rate, headroom)
    checked = replace(result, stage="router")
    if rate_plan.router_prompts(peak_rate, first + max_extra, min_seconds, min_per_replica) > MAX_NUM_PROMPTS:
        return replace(checked, reason="the peak is too large to check behind a router")

    def check(count: int) -> list:
        n = rate_plan.router_prompts(peak_rate, count, min_seconds, min_per_replica)
        units = [("router", sc, policy, count, peak_rate, slo, n) for policy in rate_plan.ROUTER_POLICIES]
        return run_all(units) if run_all is not None else [run(u) for u in units]

    replicas, checks = rate_plan.replicas_for_peak(first, check, max_extra)
    runs = result.runs + sum(len(c) for c in checks)
    if replicas is None:
        last = next(c for c in checks[-1] if not c.ok)
        return replace(checked, feasible=False, runs=runs,
                       reason=f"at the peak behind a router ({last.policy}), {last.replicas} replicas still miss "
                              f"the SLO: {'; '.join(last.misses)}")
    return replace(checked, replicas=replicas, runs=runs)


def _worst(points) -> dict:
    """The confirmation runs' worst p99s and median TPOT (each the highest over the seeds)."""
    w = dict(points[0].window)
    for key in ("p99_ttft_ms", "p99_tpot_ms", "median_tpot_ms"):
        w[key] = max(p.window[key] for p in points)
    w["mean_output_len"] = min(p.window["mean_output_len"] for p in points)
    return w


# -- cost, ranking and the front -----------------------------------------------------------------

@dataclass(frozen=True)
class Cost:
    replicas: int
    gpus: int
    per_hour: float | None
    """USD an hour for the replicas (None without a price for the GPU)."""
    per_million_tokens: float | None
    """USD per million output tokens at the load planned (the peak, or one replica at its planned
    rate when no peak is given)."""
    at_peak: bool = False
    """Sized for a peak: every point serves the same load, so the cheaper per hour is the cheaper."""


def cost(result: PointResult, price: float | None, peak_rate: float | None,
         headroom: float = planning.HEADROOM) -> Cost:
    """Replicas for the peak (those checked behind a router, `router_point`; before the check
    `sim.planning.replicas_needed`, as `plan` and step 16 propose them), GPUs, and what they cost."""
    if peak_rate is not None:
        replicas = result.replicas or planning.replicas_needed(peak_rate, result.rate, headroom)
        load = peak_rate
    else:
        replicas = 1
        load = planning.planned_rate(result.rate, headroom)
    gpus = replicas * result.point.tensor_parallel_size
    if price is None:
        return Cost(replicas, gpus, None, None, peak_rate is not None)
    per_hour = gpus * price
    tokens_per_hour = load * result.mean_output_len * 3600
    return Cost(replicas, gpus, per_hour, per_hour / tokens_per_hour * 1e6 if tokens_per_hour else None,
                peak_rate is not None)


def rank_key(result: PointResult, c: Cost) -> tuple:
    """Cheapest first: priced points by cost per hour for a peak (the same load for every point,
    so the mean output length a point's window happened to measure does not break ties) or by
    cost per million output tokens without one, then by GPUs and tokens/s per GPU; unpriced points
    after them, by GPUs then tokens/s per GPU; the point's settings last (a total order)."""
    if c.per_million_tokens is not None:
        return (0, c.per_hour if c.at_peak else c.per_million_tokens, c.gpus, -result.tokens_per_gpu, result.point)
    return (1, c.gpus, -result.tokens_per_gpu, 0.0, result.point)


def pareto_front(results: Sequence[PointResult]) -> list[PointResult]:
    """The points no other point beats on both tokens/s per GPU and tokens/s per user (higher is
    better for both), by falling tokens/s per GPU."""
    ranked = sorted(results, key=lambda r: (-r.tokens_per_gpu, -r.tokens_per_user, r.point))
    front, best_user = [], -math.inf
    for r in ranked:
        if r.tokens_per_user > best_user:
            front.append(r)
            best_user = r.tokens_per_user
    return front


def spread(items: Sequence, count: int) -> list:
    """`count` items evenly spaced along `items`, both ends included (all when there are fewer)."""
    if count <= 0:
        return []
    if len(items) <= count:
        return list(items)
    if count == 1:
        return [items[0]]
    return [items[round(i * (len(items) - 1) / (count - 1))] for i in range(count)]


def survivors(screened: Sequence[PointResult], costs: dict, best: int = CONFIRM_BEST) -> list[PointResult]:
    """The screened points worth confirming: the `best` cheapest, and `best` points of the
    screened Pareto front spread along it (its two ends among them). A fine grid puts dozens of
    points on the front; confirming each as plan does would cost more than the screen."""
    ok = [r for r in screened if r.feasible]
    ranked = sorted(ok, key=lambda r: rank_key(r, costs[r.point]))
    keep = {r.point for r in ranked[:best]} | {r.point for r in spread(pareto_front(ok), best)}
    return [r for r in ranked if r.point in keep]


def offline_point(base, point: GridPoint, num_prompts: int, say=str) -> PointResult:
    """For an offline job (--offline N): the point's run of N requests queued at once, vLLM's
    offline defaults under the point's dials; its request throughput stands for the rate (`say`:
    see `cannot_run`)."""
    from sim.engine import run_scenario

    sc = point_scenario(replace(base, offline=True).with_workload(num_prompts=num_prompts, request_rate=math.inf),
                        point)
    why = cannot_run(sc, sc.profiles(), say)
    if why is not None:
        return PointResult(point, "offline", False, reason=why, runnable=False)
    m = run_scenario(sc, keep_requests=False, api_server=True).metrics
    if not m["completed"]:
        return PointResult(point, "offline", False, reason="no request finished", runs=1, seeds=[sc.seed])
    mean_out = m["output_throughput"] / m["request_throughput"] if m["request_throughput"] else 0.0
    return PointResult(point, "offline", True, m["request_throughput"], m["request_throughput"], "", True,
                       mean_out, m["median_tpot_ms"], m["p99_ttft_ms"], m["p99_tpot_ms"], 1, [sc.seed],
                       job_s=m["duration"])
