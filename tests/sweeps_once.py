"""Rate sweeps measured once per test process for the app and snapshot tests.

Steps 7 and 16 draw a rate curve: opening either runs `sim.curves.rate_sweep` over the step's
scenario (a saturated run and a steady window at each rate, seconds of CPU). Dozens of app tests
open those steps (in sight at three sizes, one value, lesson length, goals, snapshots), and each
measured the same sweep of the same scenario again. A sweep is a pure function of its scenario and
arguments, so within one process the first measurement serves every later one: the screens get
exactly the numbers they would have computed. The sweep itself is tested where it is the point
(tests/unit/test_curves.py, test_claims.py), without this.

A scenario is a frozen dataclass holding dicts (not hashable): the key is its repr, and a hit is
taken only when the scenario also compares equal, so a repr that misses a field costs a sweep,
never a wrong curve. The other test processes of the run read what one measured
(`tests/run_cache.py`), under the same check.
"""

from __future__ import annotations

import pytest

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
    rate_sweep.remembers = True
    return rate_sweep


@pytest.fixture(scope="session", autouse=True)
def _rate_sweeps_once():
    """Every caller of `sim.curves.rate_sweep` (the curve view's thread, step 16's drill) reads
    it from the module when it runs, so replacing it there reaches them all. The app's and the
    snapshots' conftest both declare this fixture: in one session it replaces the function once
    (a second wrapper would ask the run's cache for a key its caller is computing)."""
    from sim import curves

    if getattr(curves.rate_sweep, "remembers", False):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(curves, "rate_sweep", once(curves.rate_sweep))
        yield
