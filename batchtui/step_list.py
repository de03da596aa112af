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
