"""The twenty lessons as data, loaded and checked.

Each step is one file, `steps/lessons/NN-slug.md`: TOML front matter between two `+++` lines,
then the lesson text in Markdown. A line holding only `<!-- reveal -->` splits the text: what
follows it (`Step.reveal_md`) answers the step's prediction or drill, so the app shows it only
once the learner has answered. The front matter holds

    number, title, section, minutes     the step's place and reading time
    views = [...]                       a subset of VIEWS: what the live panel shows
    hints = [...]                       short nudges shown one at a time
    [scenario]                          a `sim.scenario.Scenario` dict (num_prompts 0 = endless)
    [[dials]]                           name = a dial's dotted path (`sim.dials`), min/max/step for
                                        numbers or choices for the rest; label and unit only where
                                        the lesson words them otherwise than the dial table
    [activity]                          kind = one of ACTIVITY_KINDS, plus that kind's parameters
    [compare]       (optional)          label + scenario: overrides merged onto [scenario] to run
                                        side by side on the same arrivals (same seed)
    [sweep]         (optional)          what the "curve" view draws: batch_sizes + context (a
                                        cost-model sweep of decode batches) and/or rates (req/s)

The text, the hints and an activity's wording state figures as `{{name}}` templates, filled from
the simulator when the step is built, or as numbers pinned by a test (`steps.figures`).

`load_steps()` validates all twenty and raises `StepError` naming the file and the problem.
`open_lessons()` is the app's lazy view of the same files: it reads every file's front matter
(number, title, section, minutes: enough for a header and a table of contents) and builds a full
`Step` only when one is asked for, so the app starts without validating nineteen steps it does
not show yet. This package imports `sim` at most: never textual or rich.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim import dials
from sim.errors import ConfigError, SimError
from sim.planning import Slo
from sim.scenario import Scenario

__all__ = [
    "REVEAL_MARKER",
    "ACTIVITY_KINDS", "ActivitySpec", "Comparison", "Dial", "Lessons", "Step", "StepError",
    "StepSummary", "SweepSpec", "VIEWS", "get_path", "lesson_files", "load_step", "load_steps",
    "open_lessons", "read_lesson", "set_path",
]

NUM_STEPS = 20
VIEWS = ("seats", "kv", "iteration", "gauges", "metrics", "sparklines", "curve")
ACTIVITY_KINDS = ("drill", "break_it", "predict", "read", "cheat_sheet", "playground", "none")
MAX_WORDS = 320  # about two minutes of reading; the pane is small at 80x24

_FILE_NAME = re.compile(r"^(\d\d)-[a-z0-9]+(?:-[a-z0-9]+)*\.md$")
_TOP_KEYS = {"number", "title", "section", "minutes", "views", "hints", "scenario", "dials",
             "activity", "compare", "sweep"}
_REQUIRED = ("number", "title", "section", "minutes", "views", "scenario", "activity")


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


@dataclass(frozen=True)
class Comparison:
    """A second scenario run beside the step's own on the same arrivals."""

    label: str
    scenario: Scenario


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
    figures_pending: bool = False
    """A draft (`Lessons.draft`): its `{{figure}}` templates read `figures.PENDING` until the
    simulator has filled them; `Lessons[i]` is the same step filled."""

    def dial(self, name: str) -> Dial:
        for d in self.dials:
            if d.name == name:
                return d
        raise KeyError(name)


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


def _merge(base: dict, overrides: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


def lessons_dir() -> Path:
    # Beside this file (importlib.resources would cost the first frame a hundredth of a second).
    return Path(__file__).with_name("lessons")


def lesson_files(directory: str | Path | None = None) -> list[Path]:
    """The lesson files, in step order."""
    return _lesson_files(Path(directory) if directory is not None else lessons_dir())


def _lesson_files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.glob("*.md"))
    if not files:
        raise StepError(str(folder), "no lesson files (NN-slug.md) found")
    return files


def _check_numbers(folder: Path, numbers: list[int]) -> None:
    expected = list(range(1, NUM_STEPS + 1))
    if numbers != expected:
        missing = sorted(set(expected) - set(numbers))
        extra = sorted(set(numbers) - set(expected))
        dupes = sorted({n for n in numbers if numbers.count(n) > 1})
        parts = []
        if missing:
            parts.append("missing step " + ", ".join(map(str, missing)))
        if extra:
            parts.append("unexpected step " + ", ".join(map(str, extra)))
        if dupes:
            parts.append("step numbered twice: " + ", ".join(map(str, dupes)))
        raise StepError(str(folder), "; ".join(parts) or "steps out of order")


def load_steps(directory: str | Path | None = None) -> list[Step]:
    """All twenty steps in order, each validated. Raises StepError naming the bad file."""
    folder = Path(directory) if directory is not None else lessons_dir()
    steps = [load_step(p) for p in _lesson_files(folder)]
    _check_numbers(folder, [s.number for s in steps])
    return steps


@dataclass(frozen=True)
class StepSummary:
    """What a header or a table of contents needs of a step, read from its front matter alone."""

    number: int
    title: str
    section: str
    minutes: int
    path: Path


class Lessons(Sequence):
    """The twenty steps, built one at a time on first use (`lessons[i]` is a full, validated
    `Step`); `summaries` are ready at once. Indexing may raise StepError for a broken file."""

    def __init__(self, summaries: list[StepSummary]) -> None:
        self.summaries: tuple[StepSummary, ...] = tuple(summaries)
        self._built: dict[int, Step] = {}
        """Steps with their figures filled, each computed once per session."""
        self._unfilled: dict[int, Step] = {}
        """Steps validated, their templates not filled yet."""

    def __len__(self) -> int:
        return len(self.summaries)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = range(len(self))[index]  # negative indices, IndexError
        if index not in self._built:
            self._built[index] = _fill_figures(self._validated(index))
        return self._built[index]

    def ready(self, index: int) -> bool:
        """Whether step `index` has its figures filled (indexing it costs no simulator run)."""
        return range(len(self))[index] in self._built

    def draft(self, index: int) -> Step:
        """Step `index` validated but without running the simulator: its figures read
        `figures.PENDING` (`figures_pending`), unless they are filled already. For a first frame
        that does not wait for numpy and the engine; `self[index]` fills them."""
        index = range(len(self))[index]
        if index in self._built:
            return self._built[index]
        return _draft(self._validated(index))

    def _validated(self, index: int) -> Step:
        if index not in self._unfilled:
            summary = self.summaries[index]
            step = load_step(summary.path, fill=False)
            if step.number != summary.number:
                raise StepError(summary.path.name, "the step number changed while the app ran")
            self._unfilled[index] = step
        return self._unfilled[index]

    def __setitem__(self, index: int, step: Step) -> None:
        """Put a step in place (the playground opened on a saved scenario)."""
        index = range(len(self))[index]
        summary = self.summaries[index]
        if step.number != summary.number:
            raise ValueError(f"step {step.number} cannot replace step {summary.number}")
        self._built[index] = step


def open_lessons(directory: str | Path | None = None) -> Lessons:
    """The lessons for the app: every file's number, title, section and minutes checked now,
    each step built in full when first shown. `load_steps()` (and a test) checks all of them."""
    folder = Path(directory) if directory is not None else lessons_dir()
    summaries = [_summary(p) for p in _lesson_files(folder)]
    _check_numbers(folder, [s.number for s in summaries])
    return Lessons(summaries)


def read_lesson(path: str | Path) -> tuple[dict, str]:
    """A lesson file's front matter (a dict) and its text, raw: templates not filled."""
    data, body, _ = _read_front_matter(Path(path))
    return data, body


def _read_front_matter(p: Path) -> tuple[dict, str, str]:
    """(front matter as a dict, lesson text, file name); StepError if the file is malformed."""
    source = p.name
    if not _FILE_NAME.match(p.name):
        raise StepError(source, "a lesson file must be named NN-slug.md (two digits, lower-case slug)")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StepError(source, f"cannot read the file ({exc})") from None
    front, body = _split_front_matter(text, source)
    try:
        data = tomllib.loads(front)
    except tomllib.TOMLDecodeError as exc:
        raise StepError(source, f"the front matter is not valid TOML ({exc})") from None
    return data, body, source


def _summary(p: Path) -> StepSummary:
    data, _, source = _read_front_matter(p)
    for key in ("number", "title", "section", "minutes"):
        if key not in data:
            raise StepError(source, f"the front matter is missing {key!r}")
    number = _int(data["number"], "number", source, 1, NUM_STEPS)
    if number != int(_FILE_NAME.match(p.name).group(1)):
        raise StepError(source, f"number = {number} does not match the file name")
    return StepSummary(number, _text(data["title"], "title", source),
                       _text(data["section"], "section", source),
                       _int(data["minutes"], "minutes", source, 1, 5), p)


def load_step(path: str | Path, fill: bool = True) -> Step:
    """One lesson file, validated; its figures filled from the simulator unless `fill` is
    False (then its templates stay as written: `Lessons` fills them later)."""
    p = Path(path)
    data, body, source = _read_front_matter(p)
    step = _build_step(data, body, source, p.stem, fill)
    if step.number != int(_FILE_NAME.match(p.name).group(1)):
        raise StepError(source, f"number = {step.number} does not match the file name")
    return step


def _split_front_matter(text: str, source: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "+++":
        raise StepError(source, "the file must start with a '+++' line opening the TOML front matter")
    for i in range(1, len(lines)):
        if lines[i].strip() == "+++":
            return "".join(lines[1:i]), "".join(lines[i + 1:]).strip() + "\n"
    raise StepError(source, "the front matter has no closing '+++' line")


REVEAL_MARKER = "<!-- reveal -->"


def _split_reveal(body: str, source: str) -> tuple[str, str]:
    """The text before and after the reveal marker (the second part empty without one)."""
    parts = [part for part in re.split(r"^[ \t]*<!-- reveal -->[ \t]*$", body, flags=re.M)]
    if len(parts) > 2:
        raise StepError(source, f"the lesson text has {len(parts) - 1} {REVEAL_MARKER} lines; at most one is allowed")
    if len(parts) == 1:
        return body, ""
    return parts[0].strip() + "\n", parts[1].strip() + ("\n" if parts[1].strip() else "")


def _build_step(data: dict, body: str, source: str, stem: str, fill: bool = True) -> Step:
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise StepError(source, f"unknown key {sorted(unknown)[0]!r}; allowed: {', '.join(sorted(_TOP_KEYS))}")
    for key in _REQUIRED:
        if key not in data:
            raise StepError(source, f"the front matter is missing {key!r}")

    number = _int(data["number"], "number", source, 1, NUM_STEPS)
    title = _text(data["title"], "title", source)
    section = _text(data["section"], "section", source)
    minutes = _int(data["minutes"], "minutes", source, 1, 5)

    views = data["views"]
    if not isinstance(views, list) or not views or not all(isinstance(v, str) for v in views):
        raise StepError(source, "views must be a non-empty list of view names")
    bad = [v for v in views if v not in VIEWS]
    if bad:
        raise StepError(source, f"unknown view {bad[0]!r}; views are {', '.join(VIEWS)}")

    hints = data.get("hints", [])
    if not isinstance(hints, list) or not all(isinstance(h, str) and h.strip() for h in hints):
        raise StepError(source, "hints must be a list of non-empty strings")
    hints = tuple(hints)

    scenario = _scenario(data["scenario"], "[scenario]", source)
    dials = tuple(_dial(d, i, scenario, source) for i, d in enumerate(data.get("dials", [])))
    names = [d.name for d in dials]
    if len(set(names)) != len(names):
        raise StepError(source, "a dial is listed twice")

    activity = _activity(data["activity"], source)
    compare = _compare(data.get("compare"), data["scenario"], source)
    sweep = _sweep(data.get("sweep"), source)
    if "curve" in views and sweep is None:
        raise StepError(source, "the curve view needs a [sweep] table")

    body, reveal = _split_reveal(body, source)
    if not body.strip():
        raise StepError(source, "the lesson text after the front matter is empty")
    if "![" in body:
        raise StepError(source, "the lesson text must not use images (it runs in a terminal)")
    words = len(body.split()) + len(reveal.split())
    if words > MAX_WORDS:
        raise StepError(source, f"the lesson text has {words} words; keep it under {MAX_WORDS}")

    step = Step(number=number, slug=stem[3:], title=title, section=section, minutes=minutes,
                views=tuple(views), scenario=scenario, dials=dials, hints=hints,
                activity=activity, body_md=body, compare=compare, sweep=sweep, source=source,
                reveal_md=reveal)
    if reveal and activity.kind not in ("drill", "predict", "read", "break_it"):
        raise StepError(source, "a <!-- reveal --> section needs an activity to answer (drill, predict, read or break_it)")
    _check_activity(step)
    # Figures in the text come from the simulator: {{name}} templates filled now (steps.figures).
    return _fill_figures(step) if fill else step


FILLED_PARAMS = ("question", "choices", "explain")
"""An activity's wording, templated like the lesson text."""


def _fill_figures(step: Step) -> Step:
    """The step with every {{figure}} in its text, hints and activity wording filled from the
    simulator for its own scenario (`steps.figures`)."""
    from . import figures

    labs: list = []

    def lab():
        if not labs:
            labs.append(figures.Lab(step.scenario, step.activity.params, step.sweep,
                                    step.compare.scenario if step.compare else None, step.dials))
        return labs[0]

    def fill(text: str, where: str) -> str:
        try:
            return figures.fill(text, lab)
        except figures.FigureError as exc:
            raise StepError(step.source, f"{where}: {exc}") from None

    params = dict(step.activity.params)
    for key in FILLED_PARAMS:
        value = params.get(key)
        if isinstance(value, str):
            params[key] = fill(value, f"[activity] {key}")
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            params[key] = [fill(v, f"[activity] {key}") for v in value]
    return dataclasses.replace(
        step, body_md=fill(step.body_md, "the lesson text"), reveal_md=fill(step.reveal_md, "the lesson text"),
        hints=tuple(fill(h, "a hint") for h in step.hints), activity=ActivitySpec(step.activity.kind, params))


def _draft(step: Step) -> Step:
    """The step with every {{figure}} shown as `figures.PENDING`: no simulator run."""
    from .figures import pending

    params = dict(step.activity.params)
    for key in FILLED_PARAMS:
        value = params.get(key)
        if isinstance(value, str):
            params[key] = pending(value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            params[key] = [pending(v) for v in value]
    return dataclasses.replace(
        step, body_md=pending(step.body_md), reveal_md=pending(step.reveal_md),
        hints=tuple(pending(h) for h in step.hints), activity=ActivitySpec(step.activity.kind, params),
        figures_pending=True)


def _text(value: Any, key: str, source: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise StepError(source, f"{key} must be a non-empty string")
    return value


def _int(value: Any, key: str, source: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise StepError(source, f"{key} = {value!r} must be a whole number from {low} to {high}")
    return value


def _scenario(data: Any, where: str, source: str) -> Scenario:
    if not isinstance(data, dict):
        raise StepError(source, f"{where} must be a table")
    try:
        scenario = Scenario.from_dict(data)
        scenario.deployment()
        scenario.engine_config()
    except (SimError, TypeError) as exc:
        raise StepError(source, f"{where}: {exc}") from None
    return scenario


def _dial(data: Any, index: int, scenario: Scenario, source: str) -> Dial:
    where = f"dial {index + 1}"
    if not isinstance(data, dict):
        raise StepError(source, f"{where} must be a table")
    allowed = {"name", "label", "unit", "min", "max", "step", "choices"}
    unknown = set(data) - allowed
    if unknown:
        raise StepError(source, f"{where}: unknown key {sorted(unknown)[0]!r}")
    name = _text(data.get("name"), f"{where} name", source)
    where = f"dial {name!r}"
    if name not in dials.BY_PATH:
        raise StepError(source, f"{where}: no such setting among the dials (sim.dials), such as engine.max_num_seqs")
    spec = dials.BY_PATH[name]
    label = _text(data["label"], f"{where} label", source) if "label" in data else spec.label[0].upper() + spec.label[1:]
    unit = data.get("unit", spec.unit)
    if not isinstance(unit, str):
        raise StepError(source, f"{where}: unit must be a string")
    try:
        current = get_path(scenario, name)
    except (KeyError, AttributeError):
        raise StepError(source, f"{where}: no such setting in the scenario") from None
    if "choices" in data:
        choices = data["choices"]
        if not isinstance(choices, list) or len(choices) < 2:
            raise StepError(source, f"{where}: choices must list at least two values")
        if any(k in data for k in ("min", "max", "step")):
            raise StepError(source, f"{where}: give either choices or min/max/step, not both")
        dial = Dial(name=name, label=label, unit=unit, choices=tuple(choices))
        values = choices
    else:
        nums = {}
        for key in ("min", "max", "step"):
            v = data.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise StepError(source, f"{where}: {key} must be a number")
            nums[key] = v
        if not nums["min"] < nums["max"] or nums["step"] <= 0:
            raise StepError(source, f"{where}: needs min < max and step > 0")
        dial = Dial(name=name, label=label, unit=unit, **nums)
        values = [nums["min"], nums["max"]]
    try:
        dial.check(current)
    except ValueError as exc:
        raise StepError(source, f"{where}: the scenario's value {current!r} is outside the dial ({exc})") from None
    # Every end of the range must give a scenario the simulator accepts.
    for v in values:
        try:
            moved = set_path(scenario, name, v)
            moved.deployment()
            moved.engine_config()
        except (SimError, TypeError) as exc:
            raise StepError(source, f"{where}: the value {v!r} gives an invalid scenario ({exc})") from None
    return dial


def _activity(data: Any, source: str) -> ActivitySpec:
    if not isinstance(data, dict):
        raise StepError(source, "[activity] must be a table")
    kind = data.get("kind")
    if kind not in ACTIVITY_KINDS:
        raise StepError(source, f"[activity] kind = {kind!r} must be one of {', '.join(ACTIVITY_KINDS)}")
    params = {k: v for k, v in data.items() if k != "kind"}
    return ActivitySpec(kind=kind, params=params)


def _compare(data: Any, base: dict, source: str) -> Comparison | None:
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) - {"label", "scenario"}:
        raise StepError(source, "[compare] holds label and scenario only")
    label = _text(data.get("label"), "[compare] label", source)
    overrides = data.get("scenario")
    if not isinstance(overrides, dict) or not overrides:
        raise StepError(source, "[compare] needs a scenario table of overrides")
    return Comparison(label, _scenario(_merge(base, overrides), "[compare.scenario]", source))


def _sweep(data: Any, source: str) -> SweepSpec | None:
    if data is None:
        return None
    keys = {"batch_sizes", "context", "rates", "num_prompts", "slo_ttft_p99_ms", "slo_tpot_p99_ms"}
    if not isinstance(data, dict) or set(data) - keys:
        raise StepError(source, f"[sweep] holds {', '.join(sorted(keys))} only")
    sizes = data.get("batch_sizes", [])
    rates = data.get("rates", [])
    if not isinstance(sizes, list) or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in sizes):
        raise StepError(source, "[sweep] batch_sizes must be whole numbers > 0")
    if not isinstance(rates, list) or not all(isinstance(r, (int, float)) and not isinstance(r, bool) and r > 0
                                              for r in rates):
        raise StepError(source, "[sweep] rates must be numbers > 0 (requests/s)")
    if not sizes and not rates:
        raise StepError(source, "[sweep] needs batch_sizes or rates")
    if sizes != sorted(sizes) or rates != sorted(rates):
        raise StepError(source, "[sweep] batch_sizes and rates must be in increasing order")
    context = _int(data.get("context", 640), "[sweep] context", source, 1, 1 << 20)
    num_prompts = _int(data.get("num_prompts", 1000), "[sweep] num_prompts", source, 100, 20000)
    slo = []
    for key in ("slo_ttft_p99_ms", "slo_tpot_p99_ms"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise StepError(source, f"[sweep] {key} must be a number of ms > 0")
        slo.append(None if value is None else float(value))
    if slo[0] is not None and not rates:
        raise StepError(source, "[sweep] an SLO needs rates to sweep")
    return SweepSpec(tuple(sizes), context, tuple(float(r) for r in rates), num_prompts, *slo)


def _check_activity(step: Step) -> None:
    # Imported here: activities builds on the dataclasses above.
    from . import activities

    try:
        activities.validate_spec(step)
    except (ValueError, KeyError, TypeError) as exc:
        raise StepError(step.source, f"[activity]: {exc}") from None
