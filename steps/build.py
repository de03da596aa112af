"""A lesson file read into a `Step`: the front matter split off and parsed, every table checked
(the message names the file and the problem), the reveal split off, and the `{{figure}}` templates
filled from the simulator (or shown as pending in a draft)."""

from __future__ import annotations

import copy
import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Any

from sim import dials
from sim.errors import SimError
from sim.scenario import Scenario

from .model import (ACTIVITY_KINDS, MAX_WORDS, NUM_STEPS, VIEWS, ActivitySpec, Comparison, Dial, Step, StepError,
                    StepSummary, SweepSpec, get_path, set_path)

FILE_NAME = re.compile(r"^(\d\d)-[a-z0-9]+(?:-[a-z0-9]+)*\.md$")
"""A lesson file's name: NN-slug.md."""
_TOP_KEYS = {"number", "title", "section", "minutes", "views", "hints", "scenario", "dials",
             "activity", "compare", "sweep", "paused"}
_REQUIRED = ("number", "title", "section", "minutes", "views", "scenario", "activity")
REVEAL_MARKER = "<!-- reveal -->"


def read_front_matter(p: Path, top_level: bool = False) -> tuple[dict, str, str]:
    """(front matter as a dict, lesson text, file name); StepError if the file is malformed.
    `top_level`: only the keys before the front matter's first table, where TOML puts every
    top-level key (a step's number, title, section and minutes); the tables (scenario, dials,
    activity: three quarters of the text) are read, and checked, when the step is built."""
    source = p.name
    if not FILE_NAME.match(p.name):
        raise StepError(source, "a lesson file must be named NN-slug.md (two digits, lower-case slug)")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StepError(source, f"cannot read the file ({exc})") from None
    front, body = _split_front_matter(text, source)
    if top_level and (table := _TABLE_LINE.search(front)) is not None:
        # A line opening with "[" inside a value (a string or an array over several lines) cuts
        # the value short, and the text before it does not parse: then the whole is read.
        try:
            return tomllib.loads(front[:table.start()]), body, source
        except tomllib.TOMLDecodeError:
            pass
    try:
        data = tomllib.loads(front)
    except tomllib.TOMLDecodeError as exc:
        raise StepError(source, f"the front matter is not valid TOML ({exc})") from None
    return data, body, source


_TABLE_LINE = re.compile(r"^\[", re.M)
"""The first line of a table (`[activity]`, `[[dials]]`) in a front matter."""


def read_summary(p: Path) -> StepSummary:
    """A step's number, title, section and minutes, checked (the rest of its file is checked when
    the step is built: reading only these keys takes a fifth of the time of the whole front
    matter, 1 ms against 5 ms for the twenty, before the app's first frame)."""
    data, _, source = read_front_matter(p, top_level=True)
    for key in ("number", "title", "section", "minutes"):
        if key not in data:
            raise StepError(source, f"the front matter is missing {key!r}")
    number = _int(data["number"], "number", source, 1, NUM_STEPS)
    if number != int(FILE_NAME.match(p.name).group(1)):
        raise StepError(source, f"number = {number} does not match the file name")
    return StepSummary(number, _text(data["title"], "title", source),
                       _text(data["section"], "section", source),
                       _int(data["minutes"], "minutes", source, 1, 5), p)


def load_step(path: str | Path, fill: bool = True) -> Step:
    """One lesson file, validated; its figures filled from the simulator unless `fill` is
    False (then its templates stay as written: `Lessons` fills them later)."""
    p = Path(path)
    data, body, source = read_front_matter(p)
    step = _build_step(data, body, source, p.stem, fill)
    if step.number != int(FILE_NAME.match(p.name).group(1)):
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

    paused = data.get("paused", False)
    if not isinstance(paused, bool):
        raise StepError(source, "paused must be true or false")

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
                reveal_md=reveal, paused=paused)
    if reveal and activity.kind not in ("drill", "predict", "read", "break_it"):
        raise StepError(source, "a <!-- reveal --> section needs an activity to answer (drill, predict, read or break_it)")
    _check_activity(step)
    # Figures in the text come from the simulator: {{name}} templates filled now (steps.figures).
    return fill_figures(step) if fill else step


FILLED_PARAMS = ("question", "choices", "explain", "feedback")
"""An activity's wording, templated like the lesson text."""


def fill_figures(step: Step) -> Step:
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


def draft(step: Step) -> Step:
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


def _merge(base: dict, overrides: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
