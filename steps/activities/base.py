"""What every activity shares: typed numbers read tolerantly, a drill's questions and their
feedback, a challenge's verdict."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sim.errors import SimError
from sim.profiles import ProfileSet
from sim.reports import EngineSnapshot

from ..figures import fmt

GIB = 2**30


def seeded_rng(seed: int):
    """A seeded generator. numpy is imported here, not with the module: the app shows a step's
    activity before its first frame and most activities never draw a number."""
    import numpy as np

    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------
# Number formatting and answer parsing
# ---------------------------------------------------------------------------------------------


_NUMBER = re.compile(
    r"""(?P<num>[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|[-+]?\.\d+)   # 209, 1,209, 2.5, .5
        (?:\s*[eE]\s*(?P<exp>[-+]?\d+))?                                # 2.1e2
        \s*(?P<suffix>[kK](?![a-zA-Z]))?                                # 7.9k
    """,
    re.VERBOSE,
)
# A unit typed after a number, by the quantity it measures: a rate (tok/s, req/s), a time, a size.
_TYPED_UNIT = re.compile(
    r"""\s*(?:(?P<rate>[a-z]*\s*/\s*s(?:ec)?)
                      |(?P<time>ms|msec|milliseconds?|s|secs?|seconds?)
                      |(?P<size>[kmgt]i?b|bytes?|b))(?![a-z0-9])""",
    re.IGNORECASE | re.VERBOSE,
)
_TYPED_QUANTITY = {"rate": "a rate", "time": "a time", "size": "a size"}


def typed_unit(text: str) -> tuple[str, str] | None:
    """The quantity and unit typed right after the number `parse_number` reads ("a time", "ms"),
    or None (no unit, or a count's: "44 seqs")."""
    text = _cleaned(text)
    number = _NUMBER.search(text)
    match = _TYPED_UNIT.match(text, number.end()) if number else None
    if match is None:
        return None
    kind = next(kind for kind in _TYPED_QUANTITY if match.group(kind))
    return _TYPED_QUANTITY[kind], match.group(kind)


def _cleaned(text: str) -> str:
    """An answer as its number is read: a typographic minus as "-", narrow and no-break spaces and
    digit separators ("1_209") dropped."""
    return text.replace("\u2212", "-").replace("\u202f", "").replace("\u00a0", "").replace("_", "")


def parse_number(text: str) -> float | None:
    """The first number in `text` ("209", "209 tok/s", "2.1e2", "≈ 1,209", "7.9k"), or None."""
    if not isinstance(text, str):
        return None
    cleaned = _cleaned(text)
    match = _NUMBER.search(cleaned)
    if not match:
        return None
    number = match.group("num").replace(",", "")
    if match.group("exp"):  # read whole, as float() reads "1e400" (inf) or "1e-400" (0)
        number += "e" + match.group("exp")
    value = float(number)
    if match.group("suffix"):
        value *= 1000.0
    return value if math.isfinite(value) else None


def typed(value: float) -> str:
    """A number the learner typed, said back: as prose writes it, or in powers of ten when far
    from any answer ("1e+99", not a hundred digits; "1e-12", not a dozen zeros)."""
    if value == 0 or 1e-3 <= abs(value) < 1e9:
        return fmt(value, 4)
    return f"{value:.3g}"


# ---------------------------------------------------------------------------------------------
# Drills
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Feedback:
    """What the app shows after an answer (or a choice)."""

    correct: bool
    message: str
    value: float | None = None
    """The number read from the answer; None when none could be read."""
    show_derivation: bool = False
    """True once the question is over (right answer): show `derivation_md` now."""


@dataclass(frozen=True)
class Slip:
    """A common mistake and the answer it leads to."""

    value: float
    message: str


QUANTITY_OF_UNIT = {
    "tokens/s": "a rate", "req/s": "a rate", "requests/s": "a rate",
    "sequences": "a count of sequences", "replicas": "a count of replicas", "requests": "a count of requests",
    "ms": "a time", "s": "a time",
}
"""What a drill's answer is, by its unit: every one is a rate, a count or a time, none of which
can be negative. A question's unit must be here (`Question` refuses another), so a new drill
says what its quantity is once, where its unit is."""


class Question:
    """One drill question. Mutable: it counts attempts and remembers whether it is over."""

    def __init__(self, prompt_md: str, answer: float, unit: str, tolerance: float,
                 hints: tuple[str, ...], derivation_md: str, slips: tuple[Slip, ...] = (),
                 whole_number: bool = False, run_dials: dict | None = None,
                 facts: dict | None = None, accepted: tuple[float, ...] = ()) -> None:
        if unit not in QUANTITY_OF_UNIT:
            raise ValueError(f"a drill's unit must be one of {', '.join(QUANTITY_OF_UNIT)}, not {unit!r}")
        self.prompt_md = prompt_md
        self.answer = answer
        self.unit = unit
        self.tolerance = tolerance
        self.hints = tuple(hints[:2])
        self.derivation_md = derivation_md
        self.slips = slips
        self.whole_number = whole_number
        self.run_dials = dict(run_dials or {})
        """Dial settings (dotted scenario paths) to run the traffic this question is about."""
        self.facts = dict(facts or {})
        """The question's inputs, for tests and for the app to show."""
        self.accepted = tuple(accepted)
        """Other answers that are right too (a reading of a curve within tolerance)."""
        self.attempts = 0
        self.solved = False
        self.gave_up = False

    @property
    def tolerance_text(self) -> str:
        if self.accepted:
            return f"a reading of the curve up to {fmt(self.tolerance * 100)}% low"
        return f"±{fmt(self.tolerance * 100)}%"

    @property
    def over(self) -> bool:
        return self.solved or self.gave_up

    def is_close(self, value: float, target: float) -> bool:
        return abs(value - target) <= self.tolerance * abs(target)

    def accepts(self, value: float) -> bool:
        if self.accepted:  # (the readings' tolerance is in them: none on the count besides)
            return value == self.answer or value in self.accepted
        if self.is_close(value, self.answer):
            return True
        # A count of sequences: the whole number below or nearest the exact quotient is right too.
        return self.whole_number and value in (math.floor(self.answer), round(self.answer))

    def check(self, text: str) -> Feedback:
        value = parse_number(text)
        if value is None:
            return Feedback(False, f"Type a number, for example {fmt(self.answer * 1.37, 2)} "
                                   f"(the unit, {self.unit}, is optional).")
        self.attempts += 1
        unit = typed_unit(text)  # a unit of another quantity: not this answer, whatever the number
        if unit is not None and unit[0] != QUANTITY_OF_UNIT[self.unit]:
            return Feedback(False, f"That is {unit[0]} in {unit[1]}; the question asks for {self.unit}.", value)
        if self.accepts(value):
            self.solved = True
            if self.accepted:
                mine = "" if value == self.answer else f" for your reading of the curve (its last point " \
                                                      f"inside the SLO gives {fmt(self.answer)})"
                return Feedback(True, f"Right{mine}: {typed(value)} {self.unit}.", value, show_derivation=True)
            return Feedback(True, f"Right: {fmt(self.answer)} {self.unit} "
                                  f"(you typed {typed(value)}; within {self.tolerance_text}).",
                            value, show_derivation=True)
        if value < 0:  # no rate, count or time is below zero: not "too low", impossible
            quantity = QUANTITY_OF_UNIT[self.unit]
            return Feedback(False, f"{quantity[0].upper()}{quantity[1:]} cannot be negative (you typed "
                                   f"{typed(value)} {self.unit}). Try again or take a hint.", value)
        # Two slips can land on the same number; name both rather than guess.
        matched = list(dict.fromkeys(slip.message for slip in self.slips if self.is_close(value, slip.value)))
        if matched:
            return Feedback(False, " Or: ".join(matched[:2]), value)
        direction = "high" if value > self.answer else "low"
        return Feedback(False, f"Not quite: {typed(value)} is too {direction} "
                               f"(needed within {self.tolerance_text}). Try again or take a hint.", value)

    def hint(self, n: int) -> str:
        """Hint n (0 or 1)."""
        return self.hints[n]

    def give_up(self) -> str:
        self.gave_up = True
        return self.derivation_md


class Drill:
    """A generator of questions of one kind; `new_question(seed)` is deterministic in the seed."""

    name = ""
    title = ""

    def __init__(self, tolerance: float = 0.03) -> None:
        self.tolerance = tolerance

    def new_question(self, seed: int) -> Question:
        raise NotImplementedError


def article(name: str) -> str:
    """ "a" or "an" before a product name as it is read aloud: an H100, an A100, a B200."""
    return "an" if name[:1].upper() in "AEFHILMNORSX" else "a"


def ratio_slips(answer: float, pairs: list[tuple[float, str]]) -> tuple[Slip, ...]:
    return tuple(Slip(answer * factor, message) for factor, message in pairs)


def fits(profiles: ProfileSet, gpu_id: str, model_id: str) -> bool:
    try:
        profiles.deployment(gpu_id, model_id)
    except SimError:
        return False
    return True


@dataclass(frozen=True)
class Verdict:
    title: str
    message_md: str


@dataclass(frozen=True)
class ShowMe:
    """A challenge's "show me": settings of the step's dials (dotted paths) that break it, and
    the line that says what they are and why they break it."""

    dials: dict
    words: str


def dial_setting(dial, value: float) -> float:
    """`value` on `dial`'s grid: up to its next notch (a setting past a threshold stays past
    it), within its range."""
    notches = max(0, math.ceil((value - dial.min) / dial.step - 1e-9))
    setting = min(dial.max, dial.min + notches * dial.step)
    if all(isinstance(x, int) for x in (dial.min, dial.max, dial.step)):
        return int(setting)
    return round(setting, 9)


class BreakIt:
    """Watches snapshots; once the goal is reached, `check` returns the same Verdict every time."""

    name = ""
    goal_md = ""

    def __init__(self) -> None:
        self.verdict: Verdict | None = None
        self.step = None
        """The step it is the challenge of (`build` sets it): `show_me` reads its scenario and
        dials."""

    def reset(self) -> None:
        self.verdict = None

    def show_me(self) -> ShowMe:
        """Settings that break it from the step's start, derived from the simulator and the
        step's dial ranges, in the words the learner sees. Runs the simulator (up to about half
        a second): call it beside the app. ValueError if no setting of the dials breaks it."""
        from ..figures import Lab

        if self.step is None:
            raise ValueError("this challenge belongs to no step")
        return self.breaking(Lab(self.step.scenario, dials=self.step.dials))

    def breaking(self, lab) -> ShowMe:
        """`show_me` for the step's measurements (`steps.figures.Lab`)."""
        raise NotImplementedError

    def push_traffic(self, lab, figure: str, what: str) -> ShowMe:
        """Traffic set to the figure `figure` (the step's hints name it: half as much again as
        the engine can finish), on the traffic dial's grid; past the saturated rate, or
        ValueError. `what` says what to watch."""
        from ..figures import FIGURES

        dial = lab.dials["workload.request_rate"]
        rate = dial_setting(dial, FIGURES[figure].compute(lab))
        saturated = lab.saturated
        if rate <= saturated:
            raise ValueError(f"the traffic dial stops at {fmt(dial.max)} req/s, within what the engine "
                             f"finishes ({fmt(saturated)} req/s)")
        shown = FIGURES["saturated_rate"].text(lab)  # as the lesson and hints write it
        return ShowMe({dial.name: rate}, (
            f"Show me: {dial.label} {fmt(rate)} req/s, {fmt(rate / saturated, 2)}x the {shown} req/s it can "
            f"finish (a fresh run): {what}"))

    def check(self, snapshot: EngineSnapshot) -> Verdict | None:
        if self.verdict is None:
            self.observe(snapshot)
            if self.reached(snapshot):
                self.verdict = self.explain(snapshot)
        return self.verdict

    def observe(self, snapshot: EngineSnapshot) -> None:
        """Remember what the calm state looked like, to compare with later."""

    def reached(self, snapshot: EngineSnapshot) -> bool:
        raise NotImplementedError

    def explain(self, snapshot: EngineSnapshot) -> Verdict:
        raise NotImplementedError


@dataclass(frozen=True)
class Kind:
    """One kind of activity, declared in its own file: the lesson's `[activity] kind`, the name
    that picks it among that kind's (`drill = "replicas"`; "" for a kind of its own), the
    parameters it takes besides that name, how it is built from a step, and what more it checks
    (ValueError naming the problem)."""

    kind: str
    name: str
    params: frozenset
    build: Callable[[Any], Any]
    check: Callable[[Any], None] | None = None


DRILL_TOLERANCE = 0.03
"""A drill's tolerance when the lesson gives none."""
