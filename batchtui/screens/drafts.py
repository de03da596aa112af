"""A step opened as its draft on the tutorial screen, filled in once its figures are computed.

A step whose figures the simulator has not computed yet opens as a draft (its figures read
"…"), filled beside the app once it is drawn: the first frame does not wait for numpy and the
engine, nor a step change for its figures. What the learner did meanwhile (a guess, a hint
shown) stays. The screen computes `figures_of` beside the app and, once no other change is under
way, gives the lesson pane the step with its figures (`fill_in`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from sim.errors import SimError

from ..activity_kinds import refill, view_for
from ..widgets.question_pane import QuestionPane


def figures_of(steps, index: int):
    """Step `index` with its figures computed (in a thread: the simulator runs), or the error
    that stopped them."""
    try:
        return steps[index]
    except SimError as exc:
        return exc


async def fill_in(pane: QuestionPane, draft, progress, typing: Callable[[], bool]) -> None:
    """The lesson text, activity wording and reveal of `pane`'s step (`draft` with its figures
    filled in). `typing()`: the learner is typing in an answer box."""
    filled = pane.step
    panel = pane.activity
    updates = [pane.lesson.update(pane.words(filled.body_md))]
    # The activity with its figures: in the view on show, which keeps what the learner did (a
    # guess made as the step opened), else in a new view, unless the learner is typing in it.
    if filled.activity != draft.activity and not await refill(panel, filled) and not typing():
        updates.append(panel.show(view_for(filled, progress)))
    refill_reveal = pane.refill_reveal()
    if refill_reveal is not None:
        updates.append(refill_reveal)
    await asyncio.gather(*updates)
