"""Fitting the cost model's efficiencies and host overheads to measured serving runs.

A measured run (`Point`) is a scenario that reproduces its traffic and engine settings, plus what
`vllm bench serve` measured: TTFT p50, TPOT p50 and output throughput. `fit` looks for the GPU
parameters (`eta_bw`, `eta_mfu`, `eta_attn`, `overhead_s`, `overhead_per_seq_s`, or a subset)
under which the simulator, run on every point's scenario, reproduces those numbers: it minimises
the squared log ratios simulated/measured with Levenberg-Marquardt, the simulator a black box
(every point's traffic is drawn with the same seed each time, so the comparison between parameter
sets is not blurred by new draws). Its Jacobian is measured by finite differences and carried
across a successful step by Broyden's rank-one update (the step's change of the residuals is
known); it is measured again when a step fails or gains too little, and at the answer. The search
stops when the next step would move the parameters by less than `STOP_MOVE` standard errors.

Before fitting it checks that the points can tell the parameters apart: a parameter no
measurement moves, or one whose effect another parameter (or a mix of them) can stand in for,
cannot be fitted; `FitError` then says which measurement would pin it (a low-load run for the
prefill cost, a loaded run for the per-sequence cost, ...). Uncertainties come from the Jacobian
at the answer, with the scatter of the residuals (at least `NOISE_FLOOR`, the run-to-run spread of
a benchmark) as the noise.

Efficiencies are searched in log space (a step is a share of the value); overheads in seconds
scaled to a typical size, kept at zero or above.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .engine import run_scenario
from .errors import SimError
from .profiles import ProfileSet
from .scenario import Scenario

__all__ = ["FitError", "FitResult", "METRICS", "PARAMETERS", "Parameter", "Point", "UNDETERMINED", "fit",
           "parameter_values", "simulate_point", "undetermined", "with_parameters"]


@dataclass(frozen=True)
class Parameter:
    name: str
    label: str
    log: bool
    """Searched as log(value) (efficiencies) or as value / scale (overheads, which may be 0)."""
    scale: float
    """For an overhead: the size one unit of search stands for (seconds)."""
    step: float
    """Finite-difference step, in search units."""
    low: float
    high: float
    """Bounds of the value."""
    needs: str
    """The measurement that pins it, for the message when the points cannot."""
    loose: float
    """The most uncertainty (one standard error, search units) a fit may leave it with."""
    overlapped: bool = False
    """Host work that async scheduling (vLLM's default) runs while the GPU runs the forward pass:
    a run shows it only where it outlasts the pass."""


PARAMETERS: tuple[Parameter, ...] = (
    Parameter("eta_bw", "weight-read efficiency", True, 1.0, 0.08, 0.02, 1.0,
              "a low-load run (one request at a time, such as {workload.request_rate} 0.2 {workload.num_prompts} 20) "
              "for the cost of one decode step", 0.2),
    Parameter("eta_mfu", "tensor-core efficiency", True, 1.0, 0.08, 0.02, 1.0,
              "a low-load run for the prefill cost (a request's TTFT when it is alone), or a saturated "
              "one ({workload.request_rate} inf) for the compute-bound throughput", 0.2),
    Parameter("eta_attn", "KV-read efficiency", True, 1.0, 0.08, 0.02, 1.0,
              "a loaded run with long prompts (such as {workload.input.mean} 4096 at a rate well above "
              "one request at a time) for the cost of reading the KV cache", 0.2),
    Parameter("overhead_s", "fixed host cost per iteration", False, 1e-3, 0.3, 0.0, 0.1,
              "a low-load run and a saturated one, to split the fixed cost of an iteration from its "
              "weight reads", 0.5, overlapped=True),
    Parameter("overhead_per_seq_s", "host cost per sequence per iteration", False, 1e-5, 0.3, 0.0, 0.01,
              "a loaded run (a rate near saturation, or {workload.request_rate} inf) for the per-sequence cost", 0.5,
              overlapped=True),
)
PARAMETER_NAMES = tuple(p.name for p in PARAMETERS)
_BY_NAME = {p.name: p for p in PARAMETERS}

METRICS: tuple[tuple[str, str], ...] = (
    ("median_ttft_ms", "TTFT p50 (ms)"),
    ("median_tpot_ms", "TPOT p50 (ms)"),
    ("output_throughput", "output tok/s"),
)
"""What a fit matches, as `vllm bench serve` names it."""
METRIC_KEYS = tuple(k for k, _ in METRICS)

NOISE_FLOOR = 0.005
"""The least scatter assumed of a measured figure (0.5 %): a request served alone takes the same
time run after run to about that, so a perfect fit does not claim infinitely tight parameters.
Figures that move more with the traffic's draws get their own, larger scatter (`SPREAD_SEEDS`)."""
MAX_SPREAD = 0.02
"""The most scatter credited to a figure (2 %): three draws say little about a spread, and a loaded
run must still count, since it alone pins the per-sequence cost."""
MIN_STEP_SCALE = 0.1
"""The finest finite-difference steps, as a share of each parameter's first (wide) step."""
STOP_MOVE = 0.7
"""How near the fit goes, in standard errors of the parameters (with the noise `FitResult.noise`
states). It stops when the next Gauss-Newton step, by a Jacobian measured at the answer, would
move the parameters by less than this, jointly: the cost (in units of each figure's scatter) that
step would remove is below its square. A step that lowers the cost by less than that square is
no progress either. A change of the cost that small is within the figures' jitter (near the test
fixture's answer, steps of a few thousandths of a search unit move the cost between 2 and 8), so
no comparison of two simulated costs can confirm it. Chasing it took about 2.5 times the
simulator runs and left the fitted values, on the whole, no nearer the truth: nearer in some fits,
further in others (`python benchmarks/fit_evaluations.py --more --baseline 30bde2f`)."""
SPREAD_SEEDS = 3
"""Runs (seeds) per point that measure how much each metric moves with the traffic's draws."""
NUDGE = 0.03
"""A nudge of the parameters, as a share of their first finite-difference steps (0.24 % of an
efficiency, 9 us of the fixed overhead): too small to change a trend, enough to show jitter."""
MAX_INFLATION = 200.0
"""A parameter whose variance inflation factor (how much the other parameters can stand in for
it) exceeds this cannot be told apart from them: correlation above about 0.997."""
UNDETERMINED = 0.5
"""A fitted parameter whose standard error exceeds this share of its value is not determined by
the runs (168 us ± 416 us says nothing): `fit` keeps it at the base profile's value, fits the
others without it, and reports it in `FitResult.undetermined`, so it is never written as if
known."""
HIDDEN_SIGMAS = 2.0
"""How much of a host cost the runs do not show they allow: the largest value whose figures stay
within this many standard errors of the fit's (its cost rises by at most the square, in units of
the figures' scatter and `FitResult.noise`), a one-sided bound at about 95 %."""
HIDDEN_GRID = tuple(2.0 ** k for k in range(-4, 13))
"""The values such a cost is tried at, in multiples of its `scale` (and 0): 62 us to 4 s of the
fixed cost, 0.6 us to 41 ms a sequence, each cut at the parameter's `high`. Steps of a factor 2:
where the host's work outlasts the pass in one run only, the costs that fit it can lie within a
factor 3."""
HIDDEN_REFINE = 3
"""Halvings (in log) of the step between the last value tried the runs allow and the first they
do not."""
MIN_EFFECT = 1e-3
"""A parameter that moves no fitted metric by this much (log ratio) over a unit search step has
no measurement to go by."""


class FitError(SimError):
    """The points cannot pin the parameters (says which measurement is missing), or the fit could
    not run."""


@dataclass(frozen=True)
class Point:
    """One measured run: a scenario reproducing it, and the measured metrics (METRIC_KEYS)."""

    label: str
    scenario: Scenario
    measured: dict


@dataclass(frozen=True)
class FitResult:
    fitted: tuple[str, ...]
    """Names of the parameters fitted (the others stay at their base values)."""
    base: dict
    values: dict
    """Every parameter's value after the fit (seconds for overheads)."""
    sigma: dict
    """One standard error per fitted parameter, in the parameter's units."""
    measured: np.ndarray
    before: np.ndarray
    after: np.ndarray
    """Points x METRIC_KEYS: measured, simulated with the base values and with the fitted ones
    (NaN where the run has no such metric)."""
    rms_before: float
    rms_after: float
    """Root mean square of the log ratios simulated/measured."""
    iterations: int
    evaluations: int
    """Simulator runs of every point."""
    noise: float
    """How much worse than the traffic's own scatter the fit is (1 = as good as it can be)."""
    spread: np.ndarray
    """Points x METRIC_KEYS: each figure's scatter with the traffic's draws (log units)."""
    undetermined: dict = dataclasses.field(default_factory=dict)
    """Parameters the runs did not determine (standard error above UNDETERMINED of the value):
    name -> (the value the fit gave, its standard error). They keep their base values in
    `values` and are not in `fitted`."""
    cost: float = math.nan
    """The fit's sum of squared residuals, each in units of its figure's scatter."""
    hidden: dict = dataclasses.field(default_factory=dict)
    """Host costs no run showed: every run overlapped the host's work with the forward pass
    (async scheduling) and it never outlasted the pass. name -> the most the runs allow (seconds;
    inf when no value tried shows). Each keeps its base value in `values`, or that bound if less,
    and is not in `fitted`."""


# -- running the simulator with other parameters ---------------------------------------------------


def parameter_values(profiles: ProfileSet, gpu_id: str, model_id: str) -> dict:
    """The five parameters as a deployment of `model_id` on `gpu_id` sees them (a model's own
    value wins over its GPU's)."""
    gpu, model = profiles.gpu(gpu_id), profiles.model(model_id)
    out = {}
    for name in PARAMETER_NAMES:
        own = getattr(model, name)
        out[name] = own if own is not None else getattr(gpu, name)
    return out


def with_parameters(profiles: ProfileSet, gpu_id: str, model_id: str, values: dict) -> ProfileSet:
    """The same profiles with `values` set on the GPU (and cleared on the model, whose own values
    would otherwise win)."""
    gpus = dict(profiles.gpus)
    models = dict(profiles.models)
    gpus[gpu_id] = dataclasses.replace(profiles.gpu(gpu_id), **values)
    models[model_id] = dataclasses.replace(profiles.model(model_id), **{k: None for k in values})
    return ProfileSet(MappingProxyType(gpus), MappingProxyType(models))


def simulate_point(job: tuple[Scenario, dict]) -> tuple[float, ...]:
    """The fitted metrics of one scenario run with the GPU parameters `values` (a pool worker's
    unit of work: a scenario and a dict pickle; profiles are read again here)."""
    scenario, values = job
    profiles = with_parameters(scenario.profiles(), scenario.gpu, scenario.model, values)
    metrics = run_scenario(scenario, profiles=profiles, keep_requests=False).metrics
    return tuple(_number(metrics.get(key)) for key in METRIC_KEYS)


def _number(value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number if math.isfinite(number) and number > 0 else math.nan


Mapper = Callable[[Callable, Sequence], Iterable]


# -- search coordinates ----------------------------------------------------------------------------


def _to_search(p: Parameter, value: float) -> float:
    return math.log(value) if p.log else value / p.scale


def _from_search(p: Parameter, z: float) -> float:
    value = math.exp(z) if p.log else z * p.scale
    return min(p.high, max(p.low, value))


def _clip(params: Sequence[Parameter], z: np.ndarray) -> np.ndarray:
    return np.array([_to_search(p, _from_search(p, zi)) for p, zi in zip(params, z)])


# -- the fit ---------------------------------------------------------------------------------------


class _Problem:
    """The points, the fixed values and a counter of simulator runs."""

    def __init__(self, points: Sequence[Point], base: dict, params: Sequence[Parameter],
                 mapper: Mapper) -> None:
        self.points = list(points)
        self.base = dict(base)
        self.params = list(params)
        self.mapper = mapper
        self.measured = np.array([[_number(pt.measured.get(k)) for k in METRIC_KEYS] for pt in self.points])
        self.evaluations = 0
        self.spread = np.full(self.measured.shape, NOISE_FLOOR)

    def values(self, z: np.ndarray) -> dict:
        out = dict(self.base)
        for p, zi in zip(self.params, z):
            out[p.name] = _from_search(p, float(zi))
        return out

    def simulate(self, zs: Sequence[np.ndarray], seed_offset: int = 0) -> list[np.ndarray]:
        """Simulated metrics (points x metrics) for each search vector, all runs in one map."""
        return self.simulate_values([self.values(z) for z in zs], seed_offset)

    def simulate_values(self, sets: Sequence[dict], seed_offset: int = 0) -> list[np.ndarray]:
        """Simulated metrics (points x metrics) for each set of every parameter's values."""
        jobs = [(dataclasses.replace(pt.scenario, seed=pt.scenario.seed + seed_offset), values)
                for values in sets for pt in self.points]
        results = list(self.mapper(simulate_point, jobs))
        self.evaluations += len(sets)
        n = len(self.points)
        return [np.array(results[i * n:(i + 1) * n]) for i in range(len(sets))]

    def measure_spread(self, z: np.ndarray, first: np.ndarray) -> None:
        """Each figure's scatter, at least NOISE_FLOOR and at most MAX_SPREAD: how much it moves
        with the traffic's draws (the same runs with other seeds), or with a nudge of the
        parameters too small to matter (a fraction of a per cent: it moves iteration boundaries
        past arrivals, and a median TTFT under load jumps by per cents with them), whichever is
        more. A request alone is the same every time. Residuals are weighted by it, so the
        steady figures steer the fit and the jittery ones do not."""
        seeds = [first] + [self.simulate([z], seed_offset=k)[0] for k in range(1, SPREAD_SEEDS)]
        rng = np.random.default_rng(0)
        nudges = [z + NUDGE * np.array([p.step for p in self.params]) * rng.choice([-1.0, 1.0], len(z))
                  for _ in range(SPREAD_SEEDS - 1)]
        nudged = [first] + self.simulate([_clip(self.params, n) for n in nudges])
        with np.errstate(invalid="ignore", divide="ignore"):
            spread = np.fmax(np.nanstd(np.log(np.array(seeds)), axis=0, ddof=1),
                             np.nanstd(np.log(np.array(nudged)), axis=0, ddof=1))
        self.spread = np.clip(np.where(np.isfinite(spread), spread, NOISE_FLOOR), NOISE_FLOOR, MAX_SPREAD)

    def residuals(self, simulated: np.ndarray) -> np.ndarray:
        """log(simulated / measured) over each metric's scatter, NaN where either is
        missing."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log(simulated / self.measured) / self.spread

    def errors(self, simulated: np.ndarray) -> np.ndarray:
        """log(simulated / measured), unweighted."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log(simulated / self.measured)

    def mask(self) -> np.ndarray:
        return np.isfinite(self.measured)


def _jacobian(problem: _Problem, z: np.ndarray, mask: np.ndarray, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Central differences over each parameter's step (one-sided at a bound): d residual /
    d search unit. Wide steps first (`scale` 1): a step moves many iterations' boundaries past
    the arrivals, so the slope it measures is the trend, not one scheduling accident; narrower
    ones once the search stalls near the answer."""
    zs, spans = [], []
    for i, p in enumerate(problem.params):
        up, down = z.copy(), z.copy()
        up[i] += p.step * scale
        down[i] -= p.step * scale
        up[i] = _clip([p], up[i:i + 1])[0]
        down[i] = _clip([p], down[i:i + 1])[0]
        zs += [up, down]
        spans.append(up[i] - down[i])
    sims = problem.simulate(zs)
    columns = []
    for i, span in enumerate(spans):
        hi, lo = problem.residuals(sims[2 * i]), problem.residuals(sims[2 * i + 1])
        d = (hi - lo)[mask] / span if span else np.zeros(int(mask.sum()))
        columns.append(np.where(np.isfinite(d), d, 0.0))
    return np.column_stack(columns), np.array(spans)


def _inflation(jac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each column's norm and variance inflation factor (inf when the columns are dependent). A
    column no figure depends on is left out of the others' factors (it stands in for none of
    them) and has an infinite one itself."""
    norms = np.linalg.norm(jac, axis=0)
    vif = np.full(jac.shape[1], np.inf)
    live = norms >= MIN_EFFECT
    if live.any():
        unit = jac[:, live] / norms[live]
        try:
            inv = np.diag(np.linalg.inv(unit.T @ unit)).copy()
        except np.linalg.LinAlgError:
            inv = np.full(int(live.sum()), np.inf)
        inv[~(inv > 0)] = np.inf
        vif[live] = inv
    return norms, vif


def _unpinned(params: Sequence[Parameter], jac: np.ndarray) -> tuple[list[Parameter], list[Parameter]]:
    """(silent, tangled): the parameters no figure depends on, and those another parameter (or
    a mix of them) can stand in for (variance inflation above MAX_INFLATION) or the figures'
    scatter would leave looser than their `loose` limit."""
    norms, vif = _inflation(jac)
    live = norms >= MIN_EFFECT
    sd = np.full(len(norms), np.inf)
    if live.any():
        try:
            sd[live] = np.sqrt(np.clip(np.diag(np.linalg.inv(jac[:, live].T @ jac[:, live])), 0, None))
        except np.linalg.LinAlgError:
            pass
    # A unit of search (a factor e of an efficiency, `scale` seconds of an overhead) must move
    # some figure by more than its scatter.
    silent = [p for p, n in zip(params, norms) if not n >= MIN_EFFECT]
    tangled = [p for p, v, e in zip(params, vif, sd)
               if p not in silent and not (v <= MAX_INFLATION and e <= p.loose)]
    return silent, tangled


def check_identifiable(problem: _Problem, jac: np.ndarray) -> None:
    """Raise FitError naming the measurement missing for each parameter the points cannot pin
    (`_unpinned`)."""
    silent, tangled = _unpinned(problem.params, jac)
    if not silent and not tangled:
        return
    lines = []
    for p in silent:
        lines.append(f"{p.name} ({p.label}): no measured run depends on it; it needs {p.needs}")
    if tangled:
        names = ", ".join(p.name for p in tangled)
        lines.append(f"{names} cannot be told apart: in these runs one changes the results as another "
                     "does")
        for p in tangled:
            lines.append(f"to pin {p.name} ({p.label}), add {p.needs}")
    raise FitError(
        f"these {len(problem.points)} runs cannot fit every parameter: " + "; ".join(lines)
        + ". Or keep a parameter at the base profile's value with --fix NAME.")


def fit(points: Sequence[Point], profiles: ProfileSet, gpu_id: str, model_id: str, *,
        fit: Sequence[str] = PARAMETER_NAMES, mapper: Mapper = map,
        progress: Callable[[str], None] | None = None, max_iterations: int = 15) -> FitResult:
    """Fit the parameters named in `fit` to `points`; the others keep their values in `profiles`.

    Every point's scenario must run `model_id` on `gpu_id` (the profiles it reads are its own
    `profiles_path`'s). `mapper(func, jobs)` runs simulator jobs (the built-in `map`, or a
    process pool's). A parameter the points leave undetermined (`undetermined`) is kept at its
    base value and the others are fitted again without it. When every run overlapped the host's
    work with the forward pass (async scheduling), a host cost no run shows is set aside before
    the fit (`FitResult.hidden`), kept at its base value or at the most the runs allow, if
    less."""
    if not points:
        raise FitError("no measured runs to fit")
    unknown = [n for n in fit if n not in _BY_NAME]
    if unknown:
        raise FitError(f"unknown parameter {unknown[0]!r}; the parameters are {', '.join(PARAMETER_NAMES)}")
    params = [p for p in PARAMETERS if p.name in fit]
    if not params:
        raise FitError("every parameter is fixed: nothing to fit")
    for pt in points:
        if (pt.scenario.gpu, pt.scenario.model) != (gpu_id, model_id):
            raise FitError(f"{pt.label}: runs {pt.scenario.model} on {pt.scenario.gpu}, not {model_id} on {gpu_id}")
    base = parameter_values(profiles, gpu_id, model_id)
    overlapped = all(pt.scenario.engine_config(profiles).overlaps_host for pt in points)
    search = _Search(points, base, mapper, progress, max_iterations, overlapped)
    return search.run(base, params)


class _NoBetter(Exception):
    """A second start (`_Search.above`) that left a parameter undetermined too: given up, after
    `evaluations` simulator runs."""

    def __init__(self, evaluations: int) -> None:
        super().__init__(evaluations)
        self.evaluations = evaluations


class _Search:
    """One fit: the points, how simulator runs are made, and what every stage shares. `run`
    fits a set of parameters from a set of base values, and calls itself again without a
    parameter the runs leave undetermined, with one set aside, or with another kept value."""

    def __init__(self, points: Sequence[Point], base: dict, mapper: Mapper, progress: Callable[[str], None] | None,
                 max_iterations: int, overlapped: bool) -> None:
        self.points = list(points)
        self.profile_base = dict(base)
        self.mapper = mapper
        self.progress = progress
        self.max_iterations = max_iterations
        self.overlapped = overlapped
        """Every run overlapped the host's work with the forward pass (async scheduling)."""
        self.first: tuple[np.ndarray, np.ndarray] | None = None
        """The figures simulated with the base profile, and each figure's scatter (measured once,
        by the first stage)."""

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def run(self, base: dict, params: list[Parameter], hidden: tuple[Parameter, ...] = (),
            binding: frozenset = frozenset(), from_above: bool = False) -> FitResult:
        """Fit `params` from `base` (every parameter's value; the others are kept). `hidden`:
        overlapped parameters set aside so far (0 in `base`: the runs do not show them);
        `binding`: overlapped parameters the runs were found to show after all; `from_above`:
        this fit is the second start of `above` (it makes none of its own)."""
        points = self.points
        problem = _Problem(points, base, params, self.mapper)
        mask = problem.mask()
        m = int(mask.sum())
        if m < len(params) + 1:
            raise FitError(f"{len(points)} run(s) give {m} measured number(s) to fit {len(params)} parameter(s): "
                           "add runs at other request rates")
        say = self.say
        z = np.array([_to_search(p, base[p.name]) for p in params])
        say("simulating every run with the base profile")
        before = problem.simulate([z])[0]
        bad = [pt.label for pt, row, meas in zip(points, np.isfinite(before), mask) if (meas & ~row).any()]
        if bad:
            raise FitError(f"the simulator reports no figure for a measured metric of {bad[0]} (a run with "
                           "one-token answers has no TPOT): leave that run out")
        if self.first is None:
            say("measuring how much each figure moves with the traffic's random draws")
            problem.measure_spread(z, before)
            self.first = (before, problem.spread)
        problem.spread = self.first[1]
        r = problem.residuals(before)
        cost = float(np.sum(r[mask] ** 2))
        say("measuring how each parameter moves the results")
        jac, _ = _jacobian(problem, z, mask)
        if self.overlapped:
            silent, tangled = _unpinned(params, jac)
            aside = [p for p in params if self.hides(p, binding) and (p in silent or p in tangled)]
            if aside and len(aside) == len(params):
                raise FitError(
                    f"these runs cannot fit {', '.join(p.name for p in aside)}: every one ran with async scheduling, "
                    "under which the host's work overlaps the forward pass, and in none did it take longer, so no "
                    "figure depends on it. Fit it from runs served with --no-async-scheduling (then the host's work "
                    "adds to every pass), or keep it at the base profile's value with --fix NAME.")
            if aside:
                # Fitted without them; but a cost the base values hide may still show at more of
                # it (the runs' host work outlasting the pass where the base profile's does not):
                # when the fit without them misses the runs, try each from these base values.
                without = self.set_aside(base, params, aside, hidden, binding, 0)
                shows = {}
                if without.noise > HIDDEN_SIGMAS:  # it misses the runs: may a host cost show?
                    dof = max(1, m - len(params))
                    _, shows = self.bound_hidden(problem, z, aside, max(1.0, math.sqrt(cost / dof)), bound=False)
                chosen = self.either(without, shows, base, params, hidden, binding)
                return dataclasses.replace(chosen, evaluations=chosen.evaluations + problem.evaluations)
        check_identifiable(problem, jac)

        dof = max(1, m - len(params))
        lam = 1e-2
        scale = 1.0
        fresh = True  # `jac` measured by finite differences at `z`, at step scale `scale`
        iterations = 0
        current = before
        while iterations < self.max_iterations:
            g = jac.T @ r[mask]
            h = jac.T @ jac
            least = (STOP_MOVE * max(1.0, math.sqrt(cost / dof))) ** 2  # a meaningful fall of the cost
            if _move(params, z, h, g) < least:
                if fresh:  # what is left to gain is below the figures' scatter
                    break
                jac, fresh, lam = _jacobian(problem, z, mask, scale)[0], True, 1e-2  # check on a measured one
                continue
            iterations += 1
            measured = fresh
            gain = 0.0
            for _ in range(6):
                step = _bounded_step(params, z, h, g, lam)
                z_new = _clip(params, z + step)
                if np.allclose(z_new, z, atol=1e-7, rtol=0):
                    break
                sim = problem.simulate([z_new])[0]
                r_new = problem.residuals(sim)
                cost_new = float(np.sum(r_new[mask] ** 2)) if np.isfinite(r_new[mask]).all() else math.inf
                if cost_new < cost:
                    if _wide(params, z_new - z, scale):
                        jac = _broyden(jac, z_new - z, r_new[mask] - r[mask])
                    gain = cost - cost_new
                    z, r, cost, current = z_new, r_new, cost_new, sim
                    fresh = False
                    lam = max(lam / 3, 1e-7)
                    break
                lam *= 4
            say(f"iteration {iterations}: rms error {_rms(problem.errors(current), mask):.2%}")
            if cost < 1e-8:
                break
            if gain < least:  # stalled
                if measured:  # even a measured slope does not lead down: look closer, or stop when close
                    if scale <= MIN_STEP_SCALE:
                        break
                    scale /= 3
                jac, fresh, lam = _jacobian(problem, z, mask, scale)[0], True, 1e-2

        values = problem.values(z)
        if not (fresh and scale == 1.0):  # the uncertainty is the trend's: wide steps, at the answer
            jac, _ = _jacobian(problem, z, mask)
        # Residuals are in units of each figure's scatter: a fit no better than that keeps the
        # scatter as the noise, a worse one scales it up.
        noise = max(1.0, math.sqrt(cost / dof))
        try:
            cov = np.linalg.inv(jac.T @ jac) * noise**2
            spread = np.sqrt(np.clip(np.diag(cov), 0, None))
        except np.linalg.LinAlgError:
            spread = np.full(len(params), np.inf)
        sigma = {}
        for p, zi, s in zip(params, z, spread):
            sigma[p.name] = math.exp(zi) * (math.exp(s) - 1) if p.log else s * p.scale
        loose = undetermined(params, values, sigma)
        if loose and self.overlapped:  # a host cost the fit took down to where it stops showing
            aside = [p for p in params if p.name in loose and self.hides(p, binding)]
            if aside and len(aside) < len(params):
                return self.set_aside(values, params, aside, hidden, binding, problem.evaluations)
        if loose and from_above:  # (this start determines no more than the first did)
            raise _NoBetter(problem.evaluations)
        if loose:
            better, spent = self.above(values, params, loose, hidden, binding, cost)
            problem.evaluations += spent
            if better is not None:
                return dataclasses.replace(better, evaluations=better.evaluations + problem.evaluations)
        if loose:
            if len(loose) == len(params):
                raise FitError("these runs determine none of the parameters fitted: " + "; ".join(
                    f"{p.name} {_shown(p, values[p.name])} ± {_shown(p, sigma[p.name])}: to pin it, add {p.needs}"
                    for p in params) + ". Or keep parameters at the base profile's values with --fix NAME.")
            say(f"not determined by these runs: {', '.join(loose)} (standard error above {UNDETERMINED:.0%} of the "
                "value); fitting the others with it kept at the base profile's value")
            rest = [p for p in params if p.name not in loose]
            inner = self.run(base, rest, hidden, binding)
            return dataclasses.replace(
                inner, evaluations=inner.evaluations + problem.evaluations,
                undetermined={**{n: (values[n], sigma[n]) for n in loose}, **inner.undetermined})
        bounds, shows = {}, {}
        if hidden:
            bounds, shows = self.bound_hidden(problem, z, hidden, noise)
            # Each kept at the base profile's value, or the most the runs allow if less: the
            # figures are then the fit's, within HIDDEN_SIGMAS of their scatter.
            fitted = values
            values = {**values, **{p.name: min(self.profile_base[p.name], bounds[p.name]) for p in hidden}}
            current = problem.simulate_values([values])[0]
        before = self.first[0]
        result = FitResult(
            fitted=tuple(p.name for p in params), base=dict(self.profile_base), values=values, sigma=sigma,
            measured=problem.measured, before=before, after=current,
            rms_before=_rms(problem.errors(before), mask), rms_after=_rms(problem.errors(current), mask),
            iterations=iterations, evaluations=problem.evaluations, noise=noise, spread=problem.spread,
            hidden=bounds, cost=cost)
        if shows and noise > HIDDEN_SIGMAS:  # the fit misses the runs, and one may show: fit it, keep the better
            return self.either(result, shows, fitted, params, hidden, binding)
        return result

    def above(self, values: dict, params: list[Parameter], loose: list[str], hidden: tuple[Parameter, ...],
              binding: frozenset, cost: float) -> tuple[FitResult | None, int]:
        """A second start for a fit that left host costs undetermined near 0. A fixed cost per
        iteration and the weight reads both add to every decode step: the runs tell them apart
        only by the few iterations whose time is compute (a prefill alone), so the cost has a
        long valley between them, and a fit started below the true overhead can stop near 0
        with the weight reads slowed to make up for it, where its standard error (set by that
        spot's slopes) is larger than the value. Started again with each such cost at one unit
        of its search (1 ms, 10 us a sequence), above the valley's other end, the fit that fits
        the runs better and determines every parameter is kept; None when it does not. With the
        simulator runs the second start made."""
        up = [p for p in params if p.name in loose and not p.log and values[p.name] < p.scale]
        if not up:
            return None, 0
        self.say(f"{', '.join(p.name for p in up)} came out near 0: fitting again from "
                 + ", ".join(f"{p.name} {_shown(p, p.scale)}" for p in up))
        try:
            other = self.run({**values, **{p.name: p.scale for p in up}}, params, hidden, binding, from_above=True)
        except _NoBetter as stop:
            return None, stop.evaluations
        except FitError:
            return None, 0
        if other.hidden or not other.cost < cost:
            return None, other.evaluations
        return other, 0

    def either(self, without: FitResult, shows: dict, base: dict, params: list[Parameter],
               hidden: tuple[Parameter, ...], binding: frozenset) -> FitResult:
        """`without` (a fit with host costs set aside), or the fit with the one of `shows` (name ->
        (value, cost) of a scan) that fitted best, started from `base` with that value, when it
        fits the runs better by more than HIDDEN_SIGMAS of their scatter. A host cost can stand in
        for a slower GPU: the scan of one value alone says it may show, the fits say whether it
        does. (Asked only when `without` misses the runs by more than HIDDEN_SIGMAS times their
        scatter: a fit within it leaves nothing for a host cost to explain, and one added then
        would fit the figures' jitter.)"""
        if not shows:
            return without
        name, (value, _) = min(shows.items(), key=lambda item: item[1][1])
        names = {p.name for p in params} | {name}
        self.say(f"fitting again with {name}, which the runs may show")
        try:
            shown = self.run({**base, name: value}, [p for p in PARAMETERS if p.name in names],
                             tuple(p for p in hidden if p.name != name), binding | {name})
        except FitError:  # it leaves another parameter unmeasured: not this way
            return without
        evaluations = without.evaluations + shown.evaluations
        better = shown.cost < without.cost - HIDDEN_SIGMAS ** 2 * without.noise ** 2
        return dataclasses.replace(shown if better else without, evaluations=evaluations)

    def hides(self, p: Parameter, binding: frozenset) -> bool:
        """Whether `p` may be set aside as host work the runs do not show."""
        return self.overlapped and p.overlapped and p.name not in binding

    def set_aside(self, base: dict, params: list[Parameter], aside: list[Parameter], hidden: tuple[Parameter, ...],
                  binding: frozenset, evaluations: int) -> FitResult:
        """Fit the others with the host costs `aside` at 0 (what runs that do not show them say),
        then bound those (`bound_hidden`)."""
        self.say(f"not shown by these runs: {', '.join(p.name for p in aside)} (host work that async scheduling "
                 "overlaps with the forward pass); fitting the others without it")
        inner = self.run({**base, **{p.name: 0.0 for p in aside}}, [p for p in params if p not in aside],
                         hidden + tuple(aside), binding)
        return dataclasses.replace(inner, evaluations=inner.evaluations + evaluations)

    def bound_hidden(self, problem: _Problem, z: np.ndarray, hidden: Sequence[Parameter], noise: float,
                     bound: bool = True) -> tuple[dict, dict]:
        """Each host cost in `hidden`, tried at 0 and HIDDEN_GRID's values with every other
        parameter at `problem.values(z)`: (bounds, shows). The values the runs allow are those
        whose cost is within HIDDEN_SIGMAS standard errors (`noise` times the figures' scatter)
        of the least; `shows` holds, for each the runs do show (0 is not allowed: less of it fits
        worse), the value that fits best and its cost, and `bounds` (with `bound`) the most of
        each the runs allow (inf when every value tried from the best up is allowed)."""
        self.say(f"measuring how much of {', '.join(p.name for p in hidden)} the runs allow")
        allowed = HIDDEN_SIGMAS ** 2 * noise ** 2
        mask = problem.mask()
        answer = problem.values(z)

        def costs(p: Parameter, values: Sequence[float]) -> list[float]:
            out = []
            for sim in problem.simulate_values([{**answer, p.name: v} for v in values]):
                r = problem.residuals(sim)[mask]
                out.append(float(np.sum(r ** 2)) if np.isfinite(r).all() else math.inf)
            return out

        bounds, shows = {}, {}
        for p in hidden:
            grid = [0.0] + sorted({min(p.high, p.scale * f) for f in HIDDEN_GRID})
            c = costs(p, grid)
            least, best = min(c), int(np.argmin(c))
            if c[0] > least + allowed:
                shows[p.name] = (grid[best], least)
            if not bound:
                continue
            over = next((i for i in range(best, len(c)) if c[i] > least + allowed), None)
            if over is None:
                bounds[p.name] = math.inf
                continue
            low, high = grid[over - 1], grid[over]
            for _ in range(HIDDEN_REFINE):  # halve the step, in log where it can
                mid = math.sqrt(low * high) if low > 0 else high / 2
                if costs(p, [mid])[0] > least + allowed:
                    high = mid
                else:
                    low = mid
            bounds[p.name] = low
        return bounds, shows


def undetermined(params: Sequence[Parameter], values: dict, sigma: dict) -> list[str]:
    """Names of the parameters whose standard error is above UNDETERMINED of their value (or
    not finite), or reaches past an efficiency's ceiling (1: the fit pressed it against what it
    can be, where its slopes no longer say how well the runs pin it): what the runs do not
    determine."""
    return [p.name for p in params if not sigma[p.name] <= UNDETERMINED * abs(values[p.name])
            or (p.log and values[p.name] + sigma[p.name] > p.high)]


def value_text(name: str, value: float) -> str:
    """A parameter's value as a person reads it: overheads (`*_s`) in us below a millisecond,
    else in ms; efficiencies to three decimals."""
    if name.endswith("_s"):
        return f"{value * 1e6:,.1f} us" if value < 1e-3 else f"{value * 1e3:,.3f} ms"
    return f"{value:.3f}"


def _shown(p: Parameter, value: float) -> str:
    """A parameter's value for a message: overheads in microseconds, efficiencies as they are."""
    return f"{value * 1e6:,.1f} us" if not p.log else f"{value:.3f}"


def _bounded_step(params: Sequence[Parameter], z: np.ndarray, h: np.ndarray, g: np.ndarray,
                  lam: float) -> np.ndarray:
    """The damped Gauss-Newton step, with a parameter that sits at a bound and would be pushed
    past it held there (the others solved without it), so a bound does not stall the search."""
    free = np.ones(len(params), dtype=bool)
    for _ in range(len(params)):
        step = np.zeros(len(params))
        idx = np.flatnonzero(free)
        if not len(idx):
            return step
        sub = h[np.ix_(idx, idx)]
        step[idx] = -np.linalg.solve(sub + lam * np.diag(np.diag(sub) + 1e-12), g[idx])
        blocked = False
        for i in idx:
            p = params[i]
            value = _from_search(p, z[i])
            if (value <= p.low and step[i] < 0) or (value >= p.high and step[i] > 0):
                free[i] = False
                blocked = True
        if not blocked:
            return step
    return np.zeros(len(params))


def _move(params: Sequence[Parameter], z: np.ndarray, h: np.ndarray, g: np.ndarray) -> float:
    """The undamped (Gauss-Newton) step's length squared in standard errors of the parameters,
    in units of the residuals' scatter: the cost it would remove if the model were linear."""
    try:
        step = _bounded_step(params, z, h, g, 0.0)
    except np.linalg.LinAlgError:
        return math.inf
    return float(step @ h @ step)


def _wide(params: Sequence[Parameter], dz: np.ndarray, scale: float) -> bool:
    """Whether a step reaches as far as a finite-difference step does (in some parameter): the
    residuals' change over a narrower one is more the jitter than the trend."""
    return any(abs(d) >= p.step * scale for p, d in zip(params, dz))


def _broyden(jac: np.ndarray, dz: np.ndarray, dr: np.ndarray) -> np.ndarray:
    """The Jacobian corrected by the step just taken (Broyden's rank-one update): it then maps
    the step `dz` onto the residuals' change `dr`, and maps any direction at right angles to the
    step as before."""
    return jac + np.outer(dr - jac @ dz, dz) / float(dz @ dz)


def _rms(r: np.ndarray, mask: np.ndarray) -> float:
    return float(np.sqrt(np.mean(r[mask] ** 2)))
