"""The step list as the app reads it: a lazy `steps.Lessons` or a plain list of steps (tests)."""

from __future__ import annotations


def summaries_of(steps) -> tuple:
    """Number, title, section and minutes of every step, without building any step.

    `steps.Lessons` keeps these apart from the full steps; a plain list of `Step`s has them too."""
    return tuple(getattr(steps, "summaries", steps))


def draft_of(steps, index: int):
    """Step `index` for a first frame: filled if that costs no simulator run, else a draft whose
    figures read "…" (`steps.Lessons.draft`); a plain list's steps are filled already."""
    draft = getattr(steps, "draft", None)
    return draft(index) if draft is not None else steps[index]


def figures_of(steps, index: int):
    """Step `index` with its figures computed (in a thread beside the app: the simulator runs),
    or the `SimError` that stopped them. The first frame does not wait for numpy and the engine,
    nor a step change for its figures: the lesson pane fills its draft in (`QuestionPane.fill_in`)."""
    from sim.errors import SimError

    try:
        return steps[index]
    except SimError as exc:
        return exc
