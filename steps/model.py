"""A step as data: the `Step` a lesson file becomes, its dials, activity, comparison and sweep,
the dotted scenario paths a dial moves, and `StepError` for a malformed file."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim import dials
from sim.errors import ConfigError, SimError
from sim.planning import Slo
from sim.scenario import Scenario

NUM_STEPS = 20
VIEWS = ("seats", "kv", "iteration", "experts_drafts", "gauges", "metrics", "sparklines", "curve")
ACTIVITY_KINDS = ("drill", "break_it", "predict", "read", "cheat_sheet", "playground", "none")
MAX_WORDS = 320  # about two minutes of reading; the pane is small at 80x24


class StepError(SimError):
    """A lesson file is malformed; the message names the file and what is wrong."""

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: {problem}")


@dataclass(frozen=True)
class Dial:
    """A setting the learner may move: a dotted path into the scenario, with its range.

    Numeric dials have `min`, `max` and `step`; text (or on/off) dials have `choices`.
    """

    name: str
    label: str
    unit: str = ""
    min: float | None = None
    max: float | None = None
    step: float | None = None
    choices: tuple = ()

    @property
    def is_numeric(self) -> bool:
        return not self.choices

    def value(self, scenario: Scenario) -> Any:
        return get_path(scenario, self.name)

    def check(self, value: Any) -> Any:
        """The value if this dial allows it, else ValueError with a sentence saying why."""
        if self.choices:
            if value not in self.choices:
                raise ValueError(f"{self.label} must be one of {', '.join(map(str, self.choices))}.")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise ValueError(f"{self.label} must be a number.")
        if not self.min <= value <= self.max:
            unit = f" {self.unit}" if self.unit else ""
            raise ValueError(f"{self.label} must be between {self.min:g} and {self.max:g}{unit}.")
        return value

    def apply(self, scenario: Scenario, value: Any) -> Scenario:
        """The scenario with this dial set (validated against the dial's range)."""
        return set_path(scenario, self.name, self.check(value))


@dataclass(frozen=True)
class ActivitySpec:
    """Which activity a step runs (`kind`) and its parameters as the lesson file gives them."""

    kind: str = "none"
    params: dict = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.params.get(key, default)


MODEL_KIND_WORDS = {"encoder": "embedder", "decoder": "chat LLM"}


def seat_names(own: int, other: int) -> tuple[str, str]:
    """Two continuous-batching runs named by their seats: ("512 seats", "64 seats")."""
    return f"{own:,} seats", f"{other:,} seats"


@dataclass(frozen=True)
class Comparison:
    """A second scenario run beside the step's own on the same arrivals."""

    label: str
    scenario: Scenario

    def names(self, main: Scenario) -> tuple[str, tuple[str, str]] | None:
        """The step's run (`main`) and this one named by what differs between them, and what
        that is: ("batching", ("continuous", "static")), ("model", ("embedder", "chat LLM")) or
        ("seats", ("512 seats", "64 seats")); None when it is none of these. The compare
        table's columns and the seat panes' captions are these names, and a prediction's
        reading names each run the same way."""
        a, b = main.engine_config(), self.scenario.engine_config()
        if a.batching != b.batching:
            return "batching", (a.batching, b.batching)
        kinds = main.deployment().model.kind, self.scenario.deployment().model.kind
        if kinds[0] != kinds[1]:
            return "model", (MODEL_KIND_WORDS.get(kinds[0], kinds[0]), MODEL_KIND_WORDS.get(kinds[1], kinds[1]))
        if a.max_num_seqs != b.max_num_seqs and a.batching == "continuous":
            return "seats", seat_names(a.max_num_seqs, b.max_num_seqs)
        return None


@dataclass(frozen=True)
class SweepSpec:
    """What the curve view sweeps: fixed decode batch sizes at one context, and/or rates."""

    batch_sizes: tuple[int, ...] = ()
    context: int = 640
    rates: tuple[float, ...] = ()
    num_prompts: int = 1000
    """Requests each rate's steady window holds at least (`sim.curves.measure_rate` runs a rate
    longer until it does)."""
    slo_ttft_p99_ms: float | None = None
    """A chat SLO the rate curve draws as a line (and step 16's drill plans replicas with)."""
    slo_tpot_p99_ms: float | None = None

    @property
    def slo(self) -> Slo:
        return Slo(self.slo_ttft_p99_ms, self.slo_tpot_p99_ms)

    def rate_curve(self, scenario: Scenario, seats: int | None = None) -> tuple[float, list]:
        """(saturated rate, the rate points) of this rate sweep over `scenario` (with `seats`
        seats if given), swept as the app's curve view sweeps it."""
        from sim.curves import rate_sweep

        if seats is not None:
            scenario = scenario.with_engine(max_num_seqs=seats)
        return rate_sweep(scenario, self.rates, min_window=self.num_prompts)

    def invalidated_by(self, dial: str) -> bool:
        """Whether moving this dial (a dotted scenario path) changes the sweep, so the curve
        must be swept again: every setting does except the traffic rate, which the rate sweep
        varies itself and the batch sweep never uses."""
        return dial != "workload.request_rate"


@dataclass(frozen=True)
class Step:
    number: int
    slug: str
    title: str
    section: str
    minutes: int
    views: tuple[str, ...]
    scenario: Scenario
    dials: tuple[Dial, ...]
    hints: tuple[str, ...]
    activity: ActivitySpec
    body_md: str
    """The lesson text shown when the step opens."""
    compare: Comparison | None = None
    sweep: SweepSpec | None = None
    source: str = ""
    reveal_md: str = ""
    """The lesson text that answers the activity: shown once the learner has answered."""
    paused: bool = False
    """The run opens paused (a step that opens an iteration up, one `.` at a time)."""
    figures_pending: bool = False
    """A draft (`Lessons.draft`): its `{{figure}}` templates read `figures.PENDING` until the
    simulator has filled them; `Lessons[i]` is the same step filled."""

    @property
    def starts_running(self) -> bool:
        """Whether the step's run starts as it opens: a prediction is made before its run, and a
        step that opens an iteration up (`paused`) waits for `.`."""
        return self.activity.kind != "predict" and not self.paused

    def dial(self, name: str) -> Dial:
        for d in self.dials:
            if d.name == name:
                return d
        raise KeyError(name)


@dataclass(frozen=True)
class StepSummary:
    """What a header or a table of contents needs of a step, read from its front matter alone."""

    number: int
    title: str
    section: str
    minutes: int
    path: Path


# ---------------------------------------------------------------------------------------------
# Dotted scenario paths
# ---------------------------------------------------------------------------------------------


def get_path(scenario: Scenario, path: str) -> Any:
    """The value of a dial (`sim.dials`) such as `workload.input.mean` or `engine.max_num_seqs`;
    an `engine.*` dial the scenario leaves unset reads as the engine's resolved value. KeyError
    for a path that is not a dial."""
    try:
        return dials.get_value(scenario, path)
    except ConfigError:
        raise KeyError(path) from None


def set_path(scenario: Scenario, path: str, value: Any) -> Scenario:
    """A new scenario with the dial set, by the rules of a dial set live; raises SimError if the
    result is invalid."""
    return dials.set_value(scenario, path, value)
