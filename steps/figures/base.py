"""What every figure is made of: numbers in prose, the `Lab` a step's figures are measured in,
the `FIGURES` registry and template filling, the `PINNED` and `CHOICES` checks, and the numbers
that are names. The figures themselves are registered by the lesson groups' modules beside this one."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

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
"""Requests queued at once to measure a saturated rate (`sim.curves.saturated_point`, which then
overloads the engine with `sim.curves.OVERLOAD_PROMPTS`), as `sim.curves.rate_sweep` measures it
for the curve view."""
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
        return self.scenario.cost_model()

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

    @property
    def seats(self) -> int:
        """--max-num-seqs (or a static or dynamic batch's size)."""
        cfg = self.engine
        return cfg.max_num_seqs if cfg.batching == "continuous" else cfg.max_batch_size

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
    def saturation(self):
        """The step's saturated rate and how it was measured (`sim.curves.saturation` without
        its long search; the process keeps it, `sim.curves.saturated_point`). Exact where a full
        queue does not preempt, as in every lesson's own traffic but step 14's; where it does (the
        KV cache, not the seats, bounds the batch: step 14's lesson), the rate the full queue
        serves, which is what such an engine finishes at most once the cache is full. So it is,
        too, where a deep queue serves less than a shallower one (`Saturation.lockstep`: the cheat
        sheet's 512/256 on a B200 or with Llama 3.2 3B, whose waves of fixed lengths a deep queue
        locks into): the deep queue's rate, a few percent below what steady traffic sustains."""
        from sim.curves import saturated_point

        return saturated_point(self.scenario, self.saturation_prompts, search=False)

    @property
    def saturated_run(self):
        """The step's traffic arriving faster than the engine serves it, its queue full: the
        engine at saturation (whole-run metrics)."""
        return self.saturation.overload

    @property
    def saturation_prompts(self) -> int:
        fast = self.engine.batching in ("continuous", "dynamic")
        return SATURATION_PROMPTS if fast else QUICK_SATURATION_PROMPTS

    @property
    def saturated(self) -> float:
        """The highest rate the step's engine sustains, requests/s (`sim.curves.saturation`)."""
        return self.saturation.rate

    @property
    def saturated_output(self) -> float:
        """Output tokens/s at the saturated rate."""
        return self.saturation.output_throughput

    def steady(self, rate: float):
        """`sim.curves.measure_rate` at `rate`: the steady window of the step's traffic there, or
        `bounded=False` when it has none (the process keeps it, `sim.curves.steady_point`: a drill
        that asks about a load again, or a lesson opened again, measures it once)."""
        from sim.curves import steady_point

        return steady_point(self.scenario, rate, saturated=self.saturated, min_window=STEADY_WINDOW)

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
    step's scenario; the message says which. `why`: in the last case, the error that stopped it
    (a SimError: vLLM would refuse the setting the figure runs)."""

    why: BaseException | None = None


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
                error = FigureError(f"{{{{{name}}}}} cannot be computed for this step ({exc})")
                error.why = exc
                raise error from None
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
    for i, line in enumerate(activity.get("feedback", []) or []):
        if isinstance(line, str) and line:
            out.append((f"feedback on choice {i + 1}", line))
    return out
