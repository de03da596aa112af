"""The twenty lessons, loaded and their figures filled once per test process.

`steps.load_steps()` validates every file and runs the simulator for each step's figures (about a
second of CPU); a dozen modules and the snapshots read the same lessons, and each xdist worker ran
that once per module. A `Step` is frozen and loading reads only the package's files, so one load
serves them all, in every test process of the run (`tests/run_cache.py`).
`tests/unit/test_steps.py` calls `load_steps()` itself where loading is what it tests (broken,
missing and misnumbered lessons)."""

from __future__ import annotations

from functools import cache

import steps
from tests import run_cache


@cache
def _loaded() -> tuple:
    return run_cache.shared("steps.load_steps()", lambda: tuple(steps.load_steps()))


def lessons() -> list:
    """`steps.load_steps()`, loaded once per process: a new list each call (a test may reorder or
    cut it), the same frozen steps in it."""
    return list(_loaded())


def by_number() -> dict:
    return {s.number: s for s in _loaded()}
