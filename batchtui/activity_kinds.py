"""Which view shows each kind of activity: the one table a new kind is added to.

A lesson's `[activity] kind` names a row of `ACTIVITY_VIEWS`; the row makes the view from the
activity object `steps.activities.build(step)` returns (None for kinds that are only text) and
what the app knows of the learner. Views never import the lessons: they draw what they are given.
Adding a kind is one view file under `widgets/activities/` and one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from steps import activities

from .keys import shown
from .widgets.activities.base import ActivityView
from .widgets.activities.break_it import BreakItView
from .widgets.activities.drill import DrillView
from .widgets.activities.predict import PredictView
from .widgets.activities.read import ReadView
from .widgets.activities.text_only import TextView


class ActivityContext(NamedTuple):
    """What a view is made from."""

    step: Any
    """The `steps.Step`."""
    activity: Any
    """`steps.activities.build(step)`: a Drill, BreakIt, Predict, PercentileReading, or None."""
    saved_answer: str | None
    done_before: bool
    seed: int
    drafts: dict[int, str] = {}
    """What the learner typed in its answer box and did not enter, by question (1: the first a
    visit asks; `Progress.drafts_of`)."""


def playground_md() -> str:
    """The playground's own keys, beside its lesson (each named as keys.py binds it)."""
    chat, write, load = (shown(key) for key in ("playground.helpdesk", "playground.save", "playground.load"))
    return (f"**Chat**: `{chat}` sets the traffic to the multi-turn helpdesk (the cheat sheet's chat) on the "
            f"dials;\n`{chat}` again goes back to single turns.\n\n"
            f"**Files**: `{write}` writes this scenario to a TOML file in your state folder; `{load}` opens it "
            "again\n(`batchtui --scenario FILE` opens any saved one here).\n")

ACTIVITY_VIEWS: dict[str, Callable[[ActivityContext], ActivityView]] = {
    "drill": lambda c: DrillView(c.activity, c.seed, c.saved_answer if not c.done_before else None, c.drafts),
    "break_it": lambda c: BreakItView(c.activity, c.done_before),
    "predict": lambda c: PredictView(c.activity, _earlier_guess(c.saved_answer)),
    "read": lambda c: ReadView(c.activity, c.seed),
    "cheat_sheet": lambda c: TextView(activities.cheat_sheet_md, c.step.scenario, id="cheat-sheet"),
    "playground": lambda c: TextView(lambda scenario: playground_md(), c.step.scenario, id="playground"),
}
"""Activity kind -> its view. A kind missing here ("none") has no activity panel."""


def _earlier_guess(saved: str | None) -> int | None:
    """The choice a learner committed to on an earlier visit (progress keeps it as text)."""
    return int(saved) if saved is not None and saved.isdigit() else None


def activity_view(step, saved_answer: str | None, done_before: bool, seed: int,
                  drafts: dict[int, str] | None = None) -> ActivityView | None:
    """The view for a step's activity, or None when the step has none."""
    make = ACTIVITY_VIEWS.get(step.activity.kind)
    if make is None:
        return None
    view = make(ActivityContext(step, activities.build(step), saved_answer, done_before, seed, drafts or {}))
    view.done_before = done_before
    return view


async def refill(panel, step) -> bool:
    """The activity panel's view takes `step`'s activity (its figures filled in) in place,
    keeping what the learner did: True if it did (`ActivityView.refill`)."""
    if step.activity.kind not in ACTIVITY_VIEWS:
        return False
    return await panel.refill(activities.build(step))


def view_for(step, progress) -> ActivityView | None:
    """The view for a step's activity with what `progress` (the learner's) holds of it."""
    return activity_view(step, progress.answers.get(step.number), step.number in progress.completed,
                         seed=step.number, drafts=progress.drafts_of(step.number))
