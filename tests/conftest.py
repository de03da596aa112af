"""Hypothesis profiles for every property test.

`ci` (the default) is derandomized: the same examples on every run, so a failure in CI is a
failure on every machine. `dev` draws ten times as many fresh examples each run; select it with
`HYPOTHESIS_PROFILE=dev .venv/bin/python -m pytest tests/unit/test_engine_agrees.py`.
Tests size their example counts relative to the profile (`scaled_examples`), never absolutely.
"""

from __future__ import annotations

import os

import pytest

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", deadline=None, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_finish(session):
    """The collector settled as the app settles it (`batchtui.gc_policy`): the imports and the
    test modules frozen, the young generation grown to 10,000 objects. With Python's defaults the
    collector took about 15 % of a test process's CPU (measured on the claims and goals tests):
    full collections walked every cached run and sweep again."""
    from batchtui import gc_policy

    gc_policy.settle()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """Everything still alive frozen too, so the collections pytest runs at exit (five, looking for
    finalizers that raise) walk only what dies from here: with a worker's caches of runs and
    sweeps still tracked they took over the 5 s that execnet gives a worker to end, and it
    interrupted them. Garbage made in a test is collected (and reported) long before this."""
    import gc

    gc.freeze()


def pytest_collection_modifyitems(config, items):
    """Tests marked `wall_clock` (servers at a time scale, real terminals, a browser: they mostly
    wait) run first, so under pytest-xdist their waits overlap the CPU-bound tests instead of
    trailing after them. The order is otherwise kept (a stable sort), the same in every worker.
    With `--dist loadgroup` the `xdist_group`s (tests sharing an expensive module fixture, computed
    once on one worker) are dealt out first, the largest first."""
    items.sort(key=lambda item: item.get_closest_marker("wall_clock") is None)
