"""Rate sweeps measured once per test run for the app and snapshot tests.

Steps 7 and 16 draw a rate curve: opening either runs `sim.curves.rate_sweep` over the step's
scenario (a saturated run and a steady window at each rate, seconds of CPU). Dozens of app tests
open those steps (in sight at three sizes, one value, lesson length, goals, snapshots), and each
measured the same sweep of the same scenario again. A sweep is a pure function of its scenario and
arguments, so the first measurement serves every later one: the screens get exactly the numbers
they would have computed. The sweep itself is tested where it is the point
(tests/unit/test_curves.py, test_claims.py), without this.

A scenario is a frozen dataclass holding dicts (not hashable): the key is its repr, and a hit is
taken only when the scenario also compares equal, so a repr that misses a field costs a sweep,
never a wrong curve. The other test processes of the run read what one measured
(`tests/run_cache.py`), under the same check.
"""

from __future__ import annotations

import pytest

from sim import curves
from tests import run_cache

_MEASURED: dict[tuple, list[tuple]] = {}


def _key(scenario, rates, kwargs) -> tuple:
    return repr(scenario), tuple(float(r) for r in rates), tuple(sorted(kwargs.items()))


def once(measure):
    """`measure` (sim.curves.rate_sweep's signature) remembering what it measured."""

    def rate_sweep(scenario, rates, **kwargs):
        key = _key(scenario, rates, kwargs)
        for seen, (saturated, points) in _MEASURED.get(key, ()):
            if seen == scenario:
                return saturated, list(points)
        seen, (saturated, points) = run_cache.shared(
            "rate_sweep " + repr(key), lambda: (scenario, measure(scenario, rates, **kwargs)))
        if seen != scenario:  # another scenario with the same repr measured it
            saturated, points = measure(scenario, rates, **kwargs)
        _MEASURED.setdefault(key, []).append((scenario, (saturated, tuple(points))))
        return saturated, list(points)

    rate_sweep.__doc__ = measure.__doc__
    return rate_sweep


_REMEMBERING = once(curves.rate_sweep)


@pytest.fixture(autouse=True)
def _rate_sweeps_once(monkeypatch):
    """For the test that uses it (the app's and the snapshots' conftest declare it for theirs),
    `sim.curves.rate_sweep` remembers what every test of the run measured. Every caller (the curve
    view's thread, step 16's drill) reads it from the module when it runs, so replacing it there
    reaches them all; the other tests get the function itself."""
    monkeypatch.setattr(curves, "rate_sweep", _REMEMBERING)
