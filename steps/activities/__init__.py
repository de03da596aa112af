"""What the learner does in a step, as pure logic the app drives by keyboard.

- Drills (steps 2, 9, 15, 16): `Drill.new_question(seed) -> Question`; a retry with another seed is
  a new question. `Question.check(text)` parses a typed answer tolerantly and recognises the
  common slips; `hints` (at most two) and, once solved or given up, `derivation_md` with this
  question's own numbers.
- Break-it challenges (steps 3, 8, 10, 14): `goal_md`, and `check(snapshot)` returns a
  `Verdict` (explaining what happened with the numbers seen) once the live metrics reach the goal;
  `show_me()` the settings of the step's dials that break it (`ShowMe`), from the simulator.
- Predict-then-run: `question_md`, `choices`, `commit(n)`, then `reveal(snapshot)`.
- Reading exercise (step 18): `PercentileReading.new_question(seed) -> Read` with a table from two
  simulated runs; `Read.check(choice_number)`.
- `cheat_sheet_md(scenario)` (step 19); `save_scenario` and the helpdesk switch (step 20).

One file a kind (`base.py` holds what they share): each declares its `KIND` (`base.Kind`: the
lesson's kind, the name that picks it, its parameters, how it is built, what more it checks);
adding a kind is its file and a line in `KINDS` below. `build(step)` and `validate_spec(step)`
read only that table.

Imports `sim` (and `steps.figures`, where the numbers in prose come from) only: never textual or
rich. Simulation runs (steps 9 and 18 build their questions from measured runs, step 16 sweeps a
curve, about half a second) take well under a second each; the app should call `new_question`
from a worker.
"""

from __future__ import annotations

from typing import Any

from . import (cache_batch, cache_cap, cheat_sheet, in_flight, long_prompt_stall, past_knee, percentiles,
               playground, predict, replicas, single_stream_ceiling, static_peak)
from .base import (DRILL_TOLERANCE, GIB, BreakIt, Drill, Feedback, Kind, Question, ShowMe, Slip, Verdict,
                   dial_setting, parse_number)
from .cache_batch import CacheBatchDrill
from .cache_cap import CacheCapChallenge
from .cheat_sheet import CHEAT_SHEET_MD, cheat_sheet_md
from .in_flight import InFlightDrill
from .long_prompt_stall import LongPromptStallChallenge
from .past_knee import PastKneeChallenge
from .percentiles import READ_CHOICES, PercentileReading, Read
from .playground import WorkloadSwitch, helpdesk_switch, save_scenario
from .predict import PREDICT_COMPUTE, PREDICT_SHOW, RECENT_GAP_SAMPLES, Predict
from .replicas import ReplicasDrill
from .single_stream_ceiling import SingleStreamCeilingDrill
from .static_peak import StaticPeakChallenge
from ..figures import fmt, ms

__all__ = ["BreakIt", "CHEAT_SHEET_MD", "CacheBatchDrill", "CacheCapChallenge", "DRILL_TOLERANCE", "Drill",
           "Feedback", "GIB", "InFlightDrill", "KINDS", "Kind", "LongPromptStallChallenge", "PREDICT_COMPUTE",
           "PREDICT_SHOW", "PastKneeChallenge", "PercentileReading", "Predict", "Question", "READ_CHOICES",
           "RECENT_GAP_SAMPLES", "Read", "ReplicasDrill", "ShowMe", "SingleStreamCeilingDrill", "Slip",
           "StaticPeakChallenge", "Verdict", "WorkloadSwitch", "build", "cheat_sheet_md", "dial_setting", "fmt",
           "helpdesk_switch", "ms", "parse_number", "save_scenario", "validate_spec"]

KINDS: tuple[Kind, ...] = (
    single_stream_ceiling.KIND,
    in_flight.KIND,
    cache_batch.KIND,
    replicas.KIND,
    static_peak.KIND,
    past_knee.KIND,
    long_prompt_stall.KIND,
    cache_cap.KIND,
    predict.KIND,
    percentiles.KIND,
    cheat_sheet.KIND,
    playground.KIND,
)

SELECTOR = {"drill": "drill", "break_it": "challenge", "read": "exercise"}
"""The parameter that picks one of a kind's activities (`drill = "replicas"`)."""


def names(kind: str) -> tuple[str, ...]:
    """The activities of one kind by name: the drills, the challenges, the readings."""
    return tuple(k.name for k in KINDS if k.kind == kind)


def _kind_of(step) -> Kind | None:
    """The declared kind a step's [activity] asks for (None for "none"); ValueError if none fits."""
    spec = step.activity
    if spec.kind == "none":
        return None
    selector = SELECTOR.get(spec.kind)
    wanted = spec.params.get(selector) if selector else ""
    for kind in KINDS:
        if kind.kind == spec.kind and kind.name == wanted:
            return kind
    if selector:
        raise ValueError(f"{selector} = {wanted!r} must be one of {', '.join(names(spec.kind))}")
    raise ValueError(f"no activity of kind {spec.kind!r}")


def validate_spec(step) -> None:
    """Check a step's activity parameters; raises ValueError naming the problem."""
    spec = step.activity
    kind = _kind_of(step)
    allowed = set(kind.params) if kind is not None else set()
    if spec.kind in SELECTOR:
        allowed.add(SELECTOR[spec.kind])
    if spec.kind == "drill":
        tol = spec.params.get("tolerance", DRILL_TOLERANCE)
        if not isinstance(tol, float) or not 0 < tol < 0.5:
            raise ValueError("tolerance must be a fraction such as 0.03")
    if kind is not None and kind.check is not None:
        kind.check(step)
    unknown = set(spec.params) - allowed
    if unknown:
        raise ValueError(f"unknown parameter {sorted(unknown)[0]!r} for kind {spec.kind!r}")


def build(step) -> Any:
    """The activity object for a step: a Drill, BreakIt, Predict or PercentileReading; None for
    kinds the app renders itself (cheat_sheet, playground, none)."""
    kind = _kind_of(step)
    if kind is None:
        return None
    activity = kind.build(step)
    if isinstance(activity, BreakIt):
        activity.step = step  # its "show me" works from the step's scenario and dials
    return activity
