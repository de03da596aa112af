"""Every number a lesson states comes from one of two places, both in this file.

- A **template**, `{{name}}` in the lesson text, a hint or an activity's wording, is filled when
  the step loads: `FIGURES[name]` computes it from the step's own scenario with the simulator
  (profiles, the cost model, a request run alone, the saturated rate, one rate measured at its
  steady state: a step builds in at most about 0.15 s, `benchmarks/lesson_benchmark.py`).
- A **pinned figure** is written in the lesson as is ("about 270 ms"): `PINNED` lists it with the
  measure a test (`tests/unit/test_figures.py`) runs headless on that step's scenario and the
  tolerance it must hold to. Use it for what takes seconds to measure (several long runs).

That test fails for any other number in a lesson file, except the names in `NOT_FIGURES`
(Llama 3.1 8B, p99, step 9...). So a lesson cannot state a figure the simulator contradicts.

Templates take the figure's own rounding: the same quantity reads the same on every step.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sim import planning
from sim.errors import SimError
from sim.scenario import Scenario

# ---------------------------------------------------------------------------------------------
# Numbers in prose
# ---------------------------------------------------------------------------------------------


def fmt(value: float, digits: int = 3) -> str:
    """A number for prose: `digits` significant figures, thousands separated, no trailing zeros.
    Digits left of the point are kept (448,128 stays whole): round first for "448,000"."""
    if value == 0 or not math.isfinite(value):
        return str(value)
    magnitude = int(math.floor(math.log10(abs(value))))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def sig(value: float, digits: int = 3) -> str:
    """`value` rounded to `digits` significant figures, large ones too: 448,128 -> "448,000"."""
    if value == 0 or not math.isfinite(value):
        return str(value)
    magnitude = int(math.floor(math.log10(abs(value))))
    return fmt(round(value, digits - 1 - magnitude), digits)


def ms(seconds: float) -> str:
    """A duration for prose: "485 ms", or "3.2 s" from a second on."""
    if abs(seconds) >= 0.9995:
        return f"{fmt(seconds)} s"
    return f"{fmt(seconds * 1000.0)} ms"


def kilo(value: float) -> str:
    """A count in thousands: 448,128 -> "448k"."""
    return f"{value / 1000:,.0f}k"


def whole(value: float) -> str:
    return f"{round(value):,}"


# ---------------------------------------------------------------------------------------------
# What a step's figures are computed from
# ---------------------------------------------------------------------------------------------

STEADY_WINDOW = 1000
"""Requests a rate's steady window holds when a figure measures it (`sim.curves.measure_rate`):
enough for W within a few per cent of a long run (400, the default, wanders by 10 % on some
profiles), quick enough for a step to open at once (about a tenth of a second)."""

MEASURE_SEED = 0
"""The arrivals every figure is measured on."""

SATURATION_PROMPTS = 2000
"""Requests queued at once to measure a saturated rate (as `sim.curves.rate_sweep` does)."""
QUICK_SATURATION_PROMPTS = 500
"""The same for policies without the engine's fast path (static batching steps one iteration at
a time): a quarter of the requests, so the step opens at once. Lessons state saturated rates to
two significant figures, which 2,000 requests give too (tests/unit/test_figures.py checks)."""


class Lab:
    """A step's scenario and the measurements its figures are made of, each made at most once.

    Everything here is quick (a step must open at once); slower measurements are pinned."""

    def __init__(self, scenario: Scenario, activity: dict | None = None, sweep=None,
                 compare: Scenario | None = None, dials=()) -> None:
        self.scenario = scenario.replace(seed=MEASURE_SEED)
        """The step's scenario, measured with one seed whatever the step's: the same settings
        give the same figure on every step (step 9's in-flight example and the cheat sheet's)."""
        self.screen_scenario = scenario
        """The scenario as the step runs it, its own seed kept: for figures the screen itself
        computes (the curve step 16's drill reads)."""
        self.dials = {d.name: d for d in dials}
        """The step's dials by scenario path (their ranges are what a lesson asks the learner to
        move them to)."""
        self.activity = dict(activity or {})
        """The step's [activity] parameters (a prediction's `run` settings, for example)."""
        self.sweep = sweep
        """The step's `SweepSpec`, if it draws a curve."""
        self.compare_scenario = compare
        """The scenario run beside the step's own, if any."""
        self._memo: dict[Any, Any] = {}

    def memo(self, key, compute: Callable[[], Any]) -> Any:
        """`compute()`, made once per lab and key (a measurement several figures read)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @cached_property
    def compare(self) -> "Lab":
        """The same measurements of the scenario run beside this one."""
        if self.compare_scenario is None:
            raise ValueError("this step runs no scenario beside its own")
        return Lab(self.compare_scenario, self.activity, self.sweep)  # its seed is replaced too

    def variant(self, **engine) -> "Lab":
        """The same measurements with other engine dials."""
        return Lab(self.scenario.with_engine(**engine), self.activity, self.sweep)

    @cached_property
    def deployment(self):
        return self.scenario.deployment()

    @cached_property
    def engine(self):
        return self.scenario.engine_config()

    @cached_property
    def cost(self):
        from sim.cost import CostModel

        return CostModel(self.deployment)

    @property
    def gpu(self):
        return self.deployment.gpu

    @property
    def model(self):
        return self.deployment.model

    @property
    def prompt(self) -> int:
        return self.scenario.workload.input.mean

    @property
    def output(self) -> int:
        return self.scenario.workload.output.mean

    @cached_property
    def alone(self):
        """The record of one request of the step's length served alone."""
        from sim.engine import run_scenario

        w = self.scenario.workload
        one = self.scenario.with_workload(num_prompts=1, arrival="all-at-once", request_rate=math.inf,
                                          input=_fixed(w.input), output=_fixed(w.output),
                                          batch_pool_share=0.0)
        return run_scenario(one, keep_records=True).records[0]

    @cached_property
    def saturated_run(self):
        """The step's traffic all queued at once (`sim.curves.saturated_rate`)."""
        from sim.curves import runner, saturated_rate

        return saturated_rate(runner(self.scenario), self.saturation_prompts)

    @property
    def saturation_prompts(self) -> int:
        fast = self.engine.batching in ("continuous", "dynamic")
        return SATURATION_PROMPTS if fast else QUICK_SATURATION_PROMPTS

    @property
    def saturated(self) -> float:
        """Requests/s the step's engine completes with all its traffic queued at once."""
        return self.saturated_run.metrics["request_throughput"]

    @property
    def saturated_output(self) -> float:
        """Output tokens/s at the saturated rate."""
        return self.saturated_run.metrics["output_throughput"]

    def steady(self, rate: float):
        """`sim.curves.measure_rate` at `rate`: the steady window of the step's traffic there, or
        `bounded=False` when it has none."""
        from sim.curves import measure_rate, runner

        return self.memo(("steady", rate), lambda: measure_rate(runner(self.scenario), rate, saturated=self.saturated,
                                                                min_window=STEADY_WINDOW))

    def run_value(self, path: str):
        """The setting a prediction runs with once the guess is in."""
        run = self.activity.get("run", {})
        if path not in run:
            raise ValueError(f"the activity runs with no {path} setting")
        return run[path]


def _fixed(spec):
    from dataclasses import replace

    return replace(spec, dist="fixed", long_share=0.0) if hasattr(spec, "long_share") else replace(spec, dist="fixed")


# ---------------------------------------------------------------------------------------------
# Figures filled into templates
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    name: str
    compute: Callable[[Lab], float]
    show: Callable[[float], str]
    doc: str

    def text(self, lab: Lab) -> str:
        return self.show(self.compute(lab))


FIGURES: dict[str, Figure] = {}


def figure(name: str, show: Callable[[float], str] | int = 3):
    """Register `compute(lab) -> value` as the figure `{{name}}`, shown by `show` (a function of
    the value, or a number of significant figures)."""
    shown = show if callable(show) else (lambda v, d=show: fmt(v, d))

    def register(compute: Callable[[Lab], float]) -> Callable[[Lab], float]:
        if name in FIGURES:
            raise ValueError(f"figure {name!r} defined twice")
        FIGURES[name] = Figure(name, compute, shown, (compute.__doc__ or "").strip())
        return compute

    return register


TEMPLATE = re.compile(r"\{\{\s*([a-z][a-z0-9_]*)\s*\}\}")


class FigureError(ValueError):
    """A template names no figure, is malformed, or its figure cannot be computed for the
    step's scenario; the message says which."""


def fill(text: str, lab: Lab | Callable[[], Lab]) -> str:
    """`text` with every `{{name}}` replaced by its figure for this lab (a Lab, or a function
    making one on first need). FigureError names the template that cannot be filled."""
    if "{{" not in text:
        return text
    cache: dict[str, str] = {}

    def one(match: re.Match) -> str:
        nonlocal lab
        name = match.group(1)
        if name not in FIGURES:
            raise FigureError(f"unknown figure {{{{{name}}}}}")
        if name not in cache:
            if not isinstance(lab, Lab):
                lab = lab()
            try:
                cache[name] = FIGURES[name].text(lab)
            except (SimError, KeyError, ValueError, TypeError, AttributeError, ZeroDivisionError) as exc:
                raise FigureError(f"{{{{{name}}}}} cannot be computed for this step ({exc})") from None
        return cache[name]

    out = TEMPLATE.sub(one, text)
    if "{{" in out or "}}" in out:
        raise FigureError("a template is not closed, or its name is not lower_case_with_underscores")
    return out


PENDING = "…"
"""What a figure reads as until the simulator has computed it (a step's draft, at launch)."""


def pending(text: str) -> str:
    """`text` with every `{{name}}` shown as PENDING: no simulator run (a step's first frame)."""
    return TEMPLATE.sub(PENDING, text) if "{{" in text else text


def names_in(text: str) -> list[str]:
    return TEMPLATE.findall(text)


# ---------------------------------------------------------------------------------------------
# Figures written in the lessons as they are, each checked against a headless run
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pinned:
    """Numbers a lesson writes as they are: `text` (for example "| 2,048 | ≈ 75 ms |") must
    appear in step `step`'s wording, and `measure(lab)` -- a headless run of that step's
    scenario -- returns one value per number in `text`, in the units `text` writes them, each
    within its `rel` (one tolerance for all, or one each; 0 for a setting the row names)."""

    step: int
    text: str
    measure: Callable[[Lab], float | tuple[float, ...]]
    rel: float | tuple[float, ...]
    doc: str = ""

    @property
    def values(self) -> tuple[float, ...]:
        numbers = tuple(float(m.group().replace(",", "")) for m in NUMBER.finditer(self.text))
        if not numbers:
            raise ValueError(f"pinned figure {self.text!r} holds no number")
        return numbers

    def misses(self, lab: Lab) -> list[str]:
        """What the measure contradicts, in words (empty when every number holds)."""
        measured = self.measure(lab)
        measured = tuple(measured) if isinstance(measured, (tuple, list)) else (measured,)
        rels = self.rel if isinstance(self.rel, tuple) else (self.rel,) * len(self.values)
        if len(measured) != len(self.values) or len(rels) != len(self.values):
            return [f"{self.text!r} holds {len(self.values)} numbers; the measure gave {len(measured)}"]
        return [f"{shown:g} in {self.text!r}: measured {value:.4g} (allowed ±{rel:.0%})"
                for shown, value, rel in zip(self.values, measured, rels)
                if abs(value - shown) > rel * abs(shown)]


@dataclass(frozen=True)
class Choices:
    """A prediction whose choices are numbers: the right one (`answer`, from 1) must come within
    `rel` of `measure(lab)`, and every other numbered choice must miss it by more than 2 x rel
    (a wrong choice that is nearly right would be unfair)."""

    step: int
    measure: Callable[[Lab], float]
    rel: float
    doc: str = ""


PINNED: list[Pinned] = []
CHOICES: list[Choices] = []


def pinned(step: int, text: str, rel: float):
    """Register `measure(lab)` as the check of the figure `text` that step `step` states."""

    def register(measure: Callable[[Lab], float]) -> Callable[[Lab], float]:
        PINNED.append(Pinned(step, text, measure, rel, (measure.__doc__ or "").strip()))
        return measure

    return register


def choices(step: int, rel: float):
    def register(measure: Callable[[Lab], float]) -> Callable[[Lab], float]:
        CHOICES.append(Choices(step, measure, rel, (measure.__doc__ or "").strip()))
        return measure

    return register


# ---------------------------------------------------------------------------------------------
# Numbers that are names, not figures
# ---------------------------------------------------------------------------------------------

NOT_FIGURES = tuple(re.compile(p) for p in (
    r"Llama \d\.\d \d+B", r"Qwen\d\.\d \d+B", r"\b\d+B\b(?= model)",  # model names
    r"\b[HAB]\d00(?=s?\b)", r"\bL40S\b", r"\bGDDR6\b", r"\bHBM\d?e?\b",  # GPU and memory names
    r"\bbf16\b", r"\bfp8\b", r"\bp(?:50|90|99)\b",  # number formats, percentile names
    r"\b[Ss]teps? \d+(?:(?:, | and | or |–)\d+)*",  # a reference to another step
    r"(?m)^\s*\d+\.\s",  # a numbered list
    r"10[⁰¹²³⁴⁵⁶⁷⁸⁹]+|2[⁰¹²³⁴⁵⁶⁷⁸⁹]+",  # units defined: 10¹² bytes, 2³⁰ bytes
    r"\b2 FLOPs\b",  # a multiply and an add per parameter: what a matrix product costs
    r"\b2 \(K and V\)",  # a key and a value per token
    r"\b1 ÷",  # "1 ÷ x": a rate from a time
))
"""Digits that name something (a model, a GPU, a percentile, another step) or define a unit or a
formula's constant: the only numbers a lesson may write without a template or a PINNED entry."""

NUMBER = re.compile(r"\d(?:[\d,.]*\d)?")


def stray_numbers(text: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """Numbers in raw lesson wording that are neither templates, nor one of the `allowed`
    (pinned) texts, nor names: each with a little context."""
    text = TEMPLATE.sub(" ", text)
    for literal in sorted(allowed, key=len, reverse=True):
        text = text.replace(literal, " ")
    for pattern in NOT_FIGURES:
        text = pattern.sub(" ", text)
    return [text[max(0, m.start() - 25):m.end() + 15].replace("\n", " ") for m in NUMBER.finditer(text)]


def wording(data: dict, body: str) -> list[tuple[str, str]]:
    """Every piece of a lesson file a learner reads, raw (templates unfilled): (where, text)."""
    out = [("text", body)]
    out += [(f"hint {i + 1}", h) for i, h in enumerate(data.get("hints", [])) if isinstance(h, str)]
    activity = data.get("activity", {})
    for key in ("question", "explain"):
        if isinstance(activity.get(key), str):
            out.append((f"activity {key}", activity[key]))
    for i, choice in enumerate(activity.get("choices", []) or []):
        if isinstance(choice, str):
            out.append((f"choice {i + 1}", choice))
    return out


# =============================================================================================
# The figures, by the step that first states them. `lab` is the stating step's own scenario.
# =============================================================================================

# -- settings of the step's scenario, stated in the text ----------------------------------------


@figure("prompt", whole)
def _prompt(lab):
    """Prompt tokens of the step's (typical) request."""
    return lab.prompt


@figure("output", whole)
def _output(lab):
    """Output tokens of the step's (typical) request."""
    return lab.output


@figure("output_low", whole)
def _output_low(lab):
    """Shortest answer of a uniform spread of answer lengths."""
    return lab.scenario.workload.output.low


@figure("output_high", whole)
def _output_high(lab):
    """Longest answer of a uniform spread of answer lengths."""
    return lab.scenario.workload.output.high


@figure("per_sequence", whole)
def _per_sequence(lab):
    """Tokens a finished sequence holds: prompt + output."""
    return lab.prompt + lab.output


@figure("rate", 3)
def _rate(lab):
    """The step's traffic, requests/s."""
    return lab.scenario.workload.request_rate


@figure("seats", whole)
def _seats(lab):
    """--max-num-seqs (or a static or dynamic batch's size)."""
    cfg = lab.engine
    return cfg.max_num_seqs if cfg.batching == "continuous" else cfg.max_batch_size


@figure("budget", whole)
def _budget(lab):
    """--max-num-batched-tokens."""
    return lab.engine.max_num_batched_tokens


@figure("memory_utilization", 2)
def _memory_utilization(lab):
    """--gpu-memory-utilization."""
    return lab.scenario.gpu_memory_utilization


@figure("tolerance_pct", 2)
def _tolerance_pct(lab):
    """How close a drill's answer must be, per cent."""
    return lab.activity.get("tolerance", 0.03) * 100


# -- the hardware and the model ---------------------------------------------------------------


@figure("bytes_per_param", 1)
def _bytes_per_param(lab):
    """Bytes of one weight (bf16)."""
    return lab.model.bytes_per_param


@figure("weights_gb", 4)
def _weights_gb(lab):
    """Bytes of weights, GB."""
    return lab.deployment.weight_bytes / 1e9


@figure("bandwidth_tb", 3)
def _bandwidth_tb(lab):
    """The GPU's memory bandwidth, TB/s."""
    return lab.gpu.hbm_bandwidth / 1e12


@figure("gpu_memory_gb", 3)
def _gpu_memory_gb(lab):
    """GPU memory as CUDA reports it, GB."""
    return lab.gpu.memory_bytes / 1e9


@figure("reserve_gb", 2)
def _reserve_gb(lab):
    """Memory vLLM keeps for activations and CUDA graphs, GB."""
    return lab.deployment.reserve_bytes / 1e9


# -- one request alone (steps 1 and 2) --------------------------------------------------------


@figure("prefill_ms", 2)
def _prefill_ms(lab):
    """TTFT of one request alone: its prefill, ms."""
    return lab.alone.ttft * 1000


@figure("tpot_ms", 3)
def _tpot_ms(lab):
    """Time per output token of one request alone, ms."""
    return lab.alone.tpot * 1000


@figure("tokens_per_s", 3)
def _tokens_per_s(lab):
    """Tokens/s of one request alone."""
    return 1 / lab.alone.tpot


@figure("decode_steps", whole)
def _decode_steps(lab):
    """Decode passes after the first token: output − 1."""
    return lab.output - 1


@figure("request_s", 3)
def _request_s(lab):
    """One request alone, arrival to last token, s."""
    return lab.alone.e2e


@figure("sequential_rate", 2)
def _sequential_rate(lab):
    """Requests/s a one-at-a-time server completes: 1 ÷ one request's time."""
    return 1 / lab.alone.e2e


@figure("queue_growth", 2)
def _queue_growth(lab):
    """Requests the queue gains a second at the prediction's rate: arrivals − completions."""
    return lab.run_value("workload.request_rate") - 1 / lab.alone.e2e


@figure("run_rate", 3)
def _run_rate(lab):
    """The traffic a prediction runs at once the guess is in, requests/s."""
    return lab.run_value("workload.request_rate")


def _decode_alone(lab):
    """A decode pass of the request alone, half way through its answer."""
    return lab.cost.iteration(1, lab.prompt + lab.output // 2)


@figure("decode_bw_pct", 2)
def _decode_bw_pct(lab):
    """That as a share of the GPU's bandwidth (the gauge), per cent."""
    c = _decode_alone(lab)
    return lab.cost.bandwidth_utilization(c.bytes_read, c.total) * 100


@figure("decode_tc_pct", 1)
def _decode_tc_pct(lab):
    """That as a share of the dense bf16 peak (the gauge), per cent."""
    c = _decode_alone(lab)
    return c.flops / c.total / lab.gpu.bf16_peak_flops * 100


@figure("ceiling", 3)
def _ceiling(lab):
    """Single-stream ceiling: bandwidth ÷ weight bytes, tokens/s."""
    return lab.cost.single_stream_ceiling_tokens_per_s


@figure("real_share_pct", 2)
def _real_share_pct(lab):
    return lab.deployment.eta_bw * 100


@figure("ceiling_real", 3)
def _ceiling_real(lab):
    """The ceiling at that share, tokens/s."""
    return lab.deployment.eta_bw * lab.cost.single_stream_ceiling_tokens_per_s


@figure("gib_slip_pct", 1)
def _gib_slip_pct(lab):
    """How far a size read in GiB instead of GB moves an answer, per cent."""
    return (2**30 / 1e9 - 1) * 100


# -- saturation ---------------------------------------------------------------------------------


@figure("saturated_rate", lambda v: sig(v, 2))
def _saturated_rate(lab):
    """Requests/s the step's engine completes with its traffic all queued at once."""
    return lab.saturated


@figure("saturated_tokens", lambda v: fmt(round(v, -2), 3))
def _saturated_tokens(lab):
    """Output tokens/s at the saturated rate."""
    return lab.saturated_output


@figure("push_rate", lambda v: whole(v))
def _push_rate(lab):
    """Half as much traffic again as the engine can take, req/s: well past saturation."""
    return math.ceil(1.5 * lab.saturated)


@figure("saturated_rate_batch_1", lambda v: sig(v, 2))
def _saturated_rate_batch_1(lab):
    """Step 4's embedder at max batch size 1: requests/s with all traffic queued."""
    return lab.variant(max_batch_size=1).saturated


# -- static against continuous (step 5) --------------------------------------------------------


@figure("compare_saturated_rate", lambda v: sig(v, 2))
def _compare_saturated_rate(lab):
    """The saturated rate of the scenario run beside the step's, requests/s."""
    return lab.compare.saturated


@figure("compare_padding_pct", 2)
def _compare_padding_pct(lab):
    """Padded seat-iterations of the scenario beside the step's, saturated, per cent."""
    return lab.compare.saturated_run.metrics["padding_share"] * 100


@figure("saturated_gain", 2)
def _saturated_gain(lab):
    """Output tokens/s of the step's engine over the one beside it, both saturated."""
    return lab.saturated_output / lab.compare.saturated_output


# -- inside one iteration (step 6) --------------------------------------------------------------


@figure("vllm_seats", whole)
def _vllm_seats(lab):
    """vLLM's default --max-num-seqs for the step's GPU (`vllm serve`)."""
    from sim.config import vllm_defaults

    return vllm_defaults(lab.gpu.id, lab.gpu.memory_bytes)["max_num_seqs"]


@figure("vllm_budget", whole)
def _vllm_budget(lab):
    """vLLM's default --max-num-batched-tokens for the step's GPU (`vllm serve`)."""
    from sim.config import vllm_defaults

    return vllm_defaults(lab.gpu.id, lab.gpu.memory_bytes)["max_num_batched_tokens"]


@figure("kv_blocks", lambda v: sig(v, 2))
def _kv_blocks(lab):
    """Usable KV blocks of the step's deployment."""
    return lab.deployment.usable_blocks


def _full_decode(lab):
    """A decode iteration with every seat busy, each sequence half way through its answer."""
    return lab.cost.iteration(_seats(lab), _seats(lab) * (lab.prompt + lab.output // 2))


# -- throughput against latency (step 7) ---------------------------------------------------------


def _batch_time(lab, batch: int) -> float:
    """A decode iteration of `batch` sequences at the sweep's context: each user's time per
    token (as the curve's batch sweep computes it)."""
    context = lab.sweep.context if lab.sweep is not None else lab.prompt + lab.output // 2
    return lab.cost.iteration(batch, batch * context).total


def _gain_batches(lab) -> tuple[int, int]:
    return tuple(lab.activity.get("batches", (1, 64)))


@figure("sweep_context", whole)
def _sweep_context(lab):
    """Context of every sequence in the curve's batch sweep, tokens."""
    return lab.sweep.context


@figure("gain_from", whole)
def _gain_from(lab):
    """The smaller batch a prediction compares."""
    return _gain_batches(lab)[0]


@figure("gain_to", whole)
def _gain_to(lab):
    """The bigger batch a prediction compares."""
    return _gain_batches(lab)[1]


@figure("batch_gain", 2)
def _batch_gain(lab):
    """Tokens/s at the bigger batch over tokens/s at the smaller."""
    a, b = _gain_batches(lab)
    return (b / _batch_time(lab, b)) / (a / _batch_time(lab, a))


@figure("batch_slowdown_pct", 2)
def _batch_slowdown_pct(lab):
    """How much longer each iteration (each user's token) takes at the bigger batch, per cent."""
    a, b = _gain_batches(lab)
    return (_batch_time(lab, b) / _batch_time(lab, a) - 1) * 100


def _batch_table(lab) -> str:
    """The batch sweep as a table: batch 1, then from the prediction's bigger batch up."""
    sizes = [s for s in lab.sweep.batch_sizes if s == 1 or s >= _gain_batches(lab)[1]]
    rows = ["| batch | iteration | tokens/s |", "|---|---|---|"]
    for b in sizes:
        t = _batch_time(lab, b)
        rows.append(f"| {b:,} | {fmt(t * 1000, 3)} ms | {sig(b / t, 3)} |")
    return "\n".join(rows)


FIGURES["batch_table"] = Figure("batch_table", _batch_table, str, _batch_table.__doc__)


@figure("ridge_batch", lambda v: sig(v, 2))
def _ridge_batch(lab):
    """The batch at which the linear layers' arithmetic takes as long as the weight read."""
    one = lab.cost.iteration(1, 0)
    return one.t_weights / one.t_compute


@figure("batch_max", whole)
def _batch_max(lab):
    """The biggest batch the curve's batch sweep runs."""
    return max(lab.sweep.batch_sizes)


@choices(7, rel=0.1)
def _choices_07(lab):
    """Times the tokens/s from the smaller batch to the bigger (the right choice is near it)."""
    return _batch_gain(lab)


# -- past the knee (step 8) ----------------------------------------------------------------------

OVER, FAR = 1.2, 1.5
"""Loads step 8 compares, as multiples of the saturated rate (STEPS.md)."""


@figure("over_rate", whole)
def _over_rate(lab):
    """1.2 x the saturated rate, whole requests/s."""
    return round(OVER * lab.saturated)


@figure("far_rate", whole)
def _far_rate(lab):
    """1.5 x the saturated rate, whole requests/s."""
    return round(FAR * lab.saturated)


@figure("full_decode_ms", 3)
def _full_decode_ms(lab):
    """Every seat decoding, nothing else, each sequence halfway through its answer (prompt +
    output/2 of context): one iteration, ms. Step 7's batch table at the same batch."""
    from sim.cost import CostModel

    seats, context = lab.engine.max_num_seqs, lab.prompt + lab.output // 2
    return CostModel(lab.scenario.deployment()).iteration(seats, seats * context).total * 1000


@figure("saturated_tpot_ms", 3)
def _saturated_tpot_ms(lab):
    """TPOT p50 at the saturated rate (the step's traffic all queued at once), ms."""
    return lab.saturated_run.metrics["median_tpot_ms"]


@figure("riding_prefill", lambda v: sig(v, 2))
def _riding_prefill(lab):
    """Prompt tokens that ride along with each iteration's decodes at saturation, on average:
    newcomers per second × prompt length × seconds per iteration (TPOT p50 there)."""
    return lab.saturated * lab.prompt * _saturated_tpot_ms(lab) / 1000


# -- sequences in flight (step 9, the cheat sheet) -----------------------------------------------


def in_flight(lab: Lab, rate: float | None = None) -> tuple[float, float] | None:
    """Little's law at `rate` (the step's own by default): (W, rate x W), W the mean seconds from
    arrival to last token measured at the steady state (`sim.curves.measure_rate`) and rounded as
    it is stated (three figures), so the product is the sum a learner makes. None when the rate
    has no steady state: past saturation the time in the engine grows as long as traffic lasts.
    Step 9's example and drill and the cheat sheet all count this way."""
    rate = lab.scenario.workload.request_rate if rate is None else rate
    point = lab.steady(rate)
    if not point.bounded:
        return None
    w = float(sig(point.window["mean_e2e_ms"] / 1000.0, 3).replace(",", ""))
    return w, rate * w


def _in_flight(lab) -> tuple[float, float]:
    measured = in_flight(lab)
    if measured is None:
        raise ValueError(f"{lab.scenario.workload.request_rate:g} req/s is past this engine's saturated rate")
    return measured


@figure("in_flight_w_s", 3)
def _in_flight_w_s(lab):
    """W at the step's rate, s."""
    return _in_flight(lab)[0]


@figure("in_flight", whole)
def _in_flight_figure(lab):
    """Sequences in flight at the step's rate: rate x W."""
    return _in_flight(lab)[1]


# -- prefill against decode (steps 10 and 11) ----------------------------------------------------


@figure("long_len", whole)
def _long_len(lab):
    """Length of the occasional long prompts, tokens."""
    return lab.scenario.workload.input.long_len


@figure("long_share_pct", 2)
def _long_share_pct(lab):
    """Share of prompts that are long, per cent."""
    return lab.scenario.workload.input.long_share * 100


@figure("long_len_max", whole)
def _long_len_max(lab):
    """The longest prompt the step's dial allows, tokens."""
    return lab.dials["workload.input.long_len"].max


@figure("long_prefill_s", 2)
def _long_prefill_s(lab):
    """One iteration prefilling the longest prompt the dial allows, whole, s."""
    return lab.cost.iteration(0, 0, [(0, int(_long_len_max(lab)))]).total


@figure("gap_ratio_goal", whole)
def _gap_ratio_goal(lab):
    """The break-it goal: worst gap over TPOT p50."""
    return lab.activity.get("gap_ratio_goal", 20.0)


def _budget_run(lab, budget: int):
    """600 requests of the step's traffic at a token budget (the long prompts' share of them)."""

    def run():
        from sim.engine import run_scenario

        return run_scenario(lab.scenario.with_engine(max_num_batched_tokens=budget).with_workload(num_prompts=600),
                            keep_records=True)

    return lab.memo(("budget", budget), run)


def _budget_row(lab, budget: int) -> tuple[float, float, float]:
    """(budget, worst gap in ms, the long prompts' mean TTFT in s)."""
    run = _budget_run(lab, budget)
    long = [r.ttft for r in run.records if r.prompt_len == lab.scenario.workload.input.long_len]
    return budget, run.metrics["max_itl_ms"], sum(long) / len(long)


# Step 11's table, row by row as the lesson writes it: the budget (a setting), the worst gap
# (within 15 %: one stall decides it) and the long prompts' TTFT (within 8 %).
STEP_11_ROWS = {8192: "| 8,192 | ≈ 270 ms | ≈ 0.53 s |",
                2048: "| 2,048 | ≈ 74 ms | ≈ 0.53 s |",
                512: "| 512 | ≈ 22 ms | ≈ 0.61 s |"}
for _budget, _row in STEP_11_ROWS.items():
    PINNED.append(Pinned(11, _row, lambda lab, budget=_budget: _budget_row(lab, budget), (0.0, 0.15, 0.08),
                         "A budget's worst gap and long-prompt TTFT over 600 requests of step 11's traffic."))


@choices(11, rel=0.0)
def _choices_11(lab):
    """The budget, of the choices, whose worst gap is smallest."""
    budgets = [int(c) for c in lab.activity["choices"]]
    return min(budgets, key=lambda b: _budget_row(lab, b)[1])


# -- the KV cache (steps 12, 14, 15, 17) ---------------------------------------------------------


@figure("cache_tokens", kilo)
def _cache_tokens(lab):
    """Tokens the KV cache holds (usable blocks x block size)."""
    return lab.deployment.kv_cache_tokens


@figure("kv_memory_gb", 3)
def _kv_memory_gb(lab):
    """Memory left for the KV cache: utilisation x GPU memory − weights − reserve, GB."""
    dep = lab.deployment
    return (dep.gpu_memory_utilization * lab.gpu.memory_bytes - dep.weight_bytes - dep.reserve_bytes) / 1e9


@figure("layers", whole)
def _layers(lab):
    return lab.model.layers


@figure("kv_heads", whole)
def _kv_heads(lab):
    return lab.model.kv_heads


@figure("head_dim", whole)
def _head_dim(lab):
    return lab.model.head_dim


@figure("kv_bytes_per_value", whole)
def _kv_bytes_per_value(lab):
    """Bytes of one cached key or value element (the KV cache dtype)."""
    dep = lab.deployment
    return dep.kv_bytes_per_token / (2 * lab.model.layers * lab.model.kv_heads * lab.model.head_dim)


@figure("kv_bytes_per_token", whole)
def _kv_bytes_per_token(lab):
    return lab.deployment.kv_bytes_per_token


@figure("kv_kib_per_token", 3)
def _kv_kib_per_token(lab):
    return lab.deployment.kv_bytes_per_token / 1024


@figure("cache_batch", 3)
def _cache_batch(lab):
    """Sequences the cache holds at full length: cache tokens ÷ (prompt + output)."""
    return lab.deployment.kv_cache_tokens / (lab.prompt + lab.output)


@figure("cache_batch_whole", whole)
def _cache_batch_whole(lab):
    """Whole sequences that fit at full length."""
    return math.floor(_cache_batch(lab))


@figure("cache_batch_prompt", 3)
def _cache_batch_prompt(lab):
    """Prompts the cache holds: cache tokens ÷ prompt (vLLM admits on the prompt's blocks)."""
    return lab.deployment.kv_cache_tokens / lab.prompt


@figure("cache_batch_prompt_whole", whole)
def _cache_batch_prompt_whole(lab):
    return math.floor(_cache_batch_prompt(lab))


# -- capping the batch (step 13) -----------------------------------------------------------------


def _capped(lab) -> Lab:
    """The step's engine with the seats the prediction runs with."""
    return lab.memo("capped", lambda: lab.variant(max_num_seqs=lab.run_value("engine.max_num_seqs")))


@figure("run_seats", whole)
def _run_seats(lab):
    """The seats a prediction runs with once the guess is in."""
    return lab.run_value("engine.max_num_seqs")


@figure("capped_rate", 2)
def _capped_rate(lab):
    """Requests/s the capped engine completes, flat out."""
    return _capped(lab).saturated


# -- the cache caps the batch (step 14) ----------------------------------------------------------


@figure("cache_push_rate", 2)
def _cache_push_rate(lab):
    """Traffic that keeps the cache full: 1.5 x the saturated rate, requests/s."""
    return round(FAR * lab.saturated * 2) / 2


# -- settings for an offline job (step 17) -------------------------------------------------------


@figure("num_prompts", whole)
def _num_prompts(lab):
    """Requests of the step's workload."""
    return lab.scenario.workload.num_prompts


@figure("compare_seats", whole)
def _compare_seats(lab):
    """Seats of the scenario beside the step's."""
    return lab.compare.engine.max_num_seqs


@figure("seat_ratio", 2)
def _seat_ratio(lab):
    """The step's seats over those of the scenario beside it."""
    return lab.engine.max_num_seqs / lab.compare.engine.max_num_seqs


def _job_run(lab):
    def run():
        from sim.engine import run_scenario

        return run_scenario(lab.scenario)

    return lab.memo("job", run)


@figure("offline_gain", 2)
def _offline_gain(lab):
    """How many times sooner the step's job ends than the same job beside it."""
    return _job_run(lab.compare).metrics["duration"] / _job_run(lab).metrics["duration"]


@figure("offline_tpot_ratio", 2)
def _offline_tpot_ratio(lab):
    """The step's TPOT over that of the job beside it."""
    return _job_run(lab).metrics["median_tpot_ms"] / _job_run(lab.compare).metrics["median_tpot_ms"]


@figure("vllm_offline_budget", whole)
def _vllm_offline_budget(lab):
    """vLLM's default --max-num-batched-tokens for offline use on the step's GPU."""
    from sim.config import vllm_defaults

    return vllm_defaults(lab.gpu.id, lab.gpu.memory_bytes, offline=True)["max_num_batched_tokens"]


@choices(17, rel=0.1)
def _choices_17(lab):
    """How many times sooner the job ends with the step's seats."""
    return _offline_gain(lab)


# -- reading percentiles (step 18) ---------------------------------------------------------------


@figure("batch_prompt", whole)
def _batch_prompt(lab):
    return lab.scenario.workload.batch_input.mean


@figure("batch_output", whole)
def _batch_output(lab):
    return lab.scenario.workload.batch_output.mean


@figure("batch_share_pct", 2)
def _batch_share_pct(lab):
    return lab.scenario.workload.batch_pool_share * 100


# -- settings for a chat SLO (step 16) -----------------------------------------------------------


@figure("slo_ttft_ms", 3)
def _slo_ttft_ms(lab):
    """The SLO's TTFT p99 bound, ms (the curve draws it)."""
    return lab.sweep.slo_ttft_p99_ms


@figure("slo_tpot_ms", 3)
def _slo_tpot_ms(lab):
    """The SLO's TPOT p99 bound, ms."""
    return lab.sweep.slo_tpot_p99_ms


@figure("headroom", 2)
def _headroom(lab):
    """Share of its SLO rate each replica is planned at: 1 - `sim.planning.HEADROOM`."""
    return planning.planned_rate(1.0)


@figure("headroom_pct", 2)
def _headroom_pct(lab):
    return planning.planned_rate(100.0)


def _slo_rate(lab, seats: int) -> float:
    """The SLO rate of the step's rate curve at `seats` seats, swept as step 16's drill sweeps it."""
    _, points = lab.memo(("rate_curve", seats), lambda: lab.sweep.rate_curve(lab.screen_scenario, seats))
    best, _ = planning.slo_rate(points, lab.sweep.slo)
    return best.rate


PINNED.append(Pinned(16, "about 33 req/s", lambda lab: _slo_rate(lab, lab.engine.max_num_seqs), 0.0,
                     "The SLO rate of step 16's curve at its own seats (a sweep: about a second)."))
PINNED.append(Pinned(16, "With 64 seats", lambda lab: 64, 0.0, "The smaller batch the lesson compares."))
PINNED.append(Pinned(16, "about 20 req/s", lambda lab: _slo_rate(lab, 64), 0.0,
                     "The SLO rate of step 16's curve at 64 seats."))


# -- the cheat sheet (step 19) ---------------------------------------------------------------------

CHEAT_PEAK = 150.0
"""The peak the cheat sheet's replicas line plans for (step 16's example)."""


def _text_figure(name: str):
    """Register `compute(lab) -> str` as the figure `{{name}}`: words, not a number."""

    def register(compute):
        FIGURES[name] = Figure(name, compute, str, (compute.__doc__ or "").strip())
        return compute

    return register


@_text_figure("model_name")
def _model_name(lab):
    return lab.model.name


@_text_figure("gpu_name")
def _gpu_name(lab):
    tp = lab.deployment.tensor_parallel_size
    return lab.gpu.name + (f" × {tp}" if tp > 1 else "")


@_text_figure("in_flight_line")
def _in_flight_line(lab):
    """Little's law at the scenario's rate, or why it has no answer there."""
    rate = lab.scenario.workload.request_rate
    measured = in_flight(lab)
    if measured is None:
        where = "past" if rate >= lab.saturated else "too close to"
        return (f"**In flight** = λ × W: {fmt(rate)} req/s is {where} this engine's saturated rate "
                f"({sig(lab.saturated, 2)} req/s), so there is no steady W: the queue grows and the batch "
                f"stays near the seats ({whole(_seats(lab))}).")
    w, n = measured
    return (f"**In flight** = λ × W: {fmt(rate)} req/s × {fmt(w)} s ≈ **{whole(n)}** (W measured at this "
            f"load: TTFT + {whole(lab.output - 1)} × TPOT, step 9).")


@_text_figure("chat_seats_line")
def _chat_seats_line(lab):
    measured = in_flight(lab)
    if measured is None:
        return "seats ≥ the batch in flight at each replica's share of the peak, below the knee"
    return f"seats ≥ in flight (≈ {whole(measured[1])} here) and below the knee"


@figure("cheat_peak", 3)
def _cheat_peak(lab):
    return CHEAT_PEAK


@figure("cheat_replicas_floor", 2)
def _cheat_replicas_floor(lab):
    """The peak over what replicas planned at the saturated rate carry: a floor on replicas."""
    return CHEAT_PEAK / planning.planned_rate(lab.saturated)


# -- what a shared prefix saves (the cheat sheet) ----------------------------------------------------

HELPDESK_CONVERSATIONS = 60
"""Conversations of the multi-turn helpdesk (`sim.workload.MULTI_TURN_HELPDESK`) the cheat sheet
runs: its hit rate holds to a tenth of a per cent from 50 on, and the run takes hundredths of a
second (the cheat sheet is worked again on every dial move)."""


def helpdesk_run(lab: Lab, caching: bool):
    """The multi-turn helpdesk on the lab's deployment and engine, prefix caching on or off: the
    run's summary metrics (hit rate, TTFT)."""
    def run():
        from dataclasses import replace

        from sim.engine import run_scenario
        from sim.workload import MULTI_TURN_HELPDESK

        workload = replace(MULTI_TURN_HELPDESK, num_prompts=HELPDESK_CONVERSATIONS)
        scenario = replace(lab.scenario, workload=workload).with_engine(enable_prefix_caching=caching)
        return run_scenario(scenario).metrics

    return lab.memo(("helpdesk", caching), run)


@figure("helpdesk_prefix", whole)
def _helpdesk_prefix(lab):
    """The helpdesk chat's system prompt, shared by every conversation."""
    from sim.workload import MULTI_TURN_HELPDESK

    return MULTI_TURN_HELPDESK.prefix_len


@figure("helpdesk_turns", whole)
def _helpdesk_turns(lab):
    from sim.workload import MULTI_TURN_HELPDESK

    return MULTI_TURN_HELPDESK.turns


@figure("helpdesk_hit_pct", 2)
def _helpdesk_hit_pct(lab):
    """Of the helpdesk's prompt tokens, the share the prefix cache held (vLLM's hit rate)."""
    return 100.0 * helpdesk_run(lab, True)["prefix_cache_hit_rate"]


@figure("helpdesk_ttft_on_ms", 3)
def _helpdesk_ttft_on_ms(lab):
    return helpdesk_run(lab, True)["median_ttft_ms"]


@figure("helpdesk_ttft_off_ms", 3)
def _helpdesk_ttft_off_ms(lab):
    return helpdesk_run(lab, False)["median_ttft_ms"]
