"""Hypothesis profiles for every property test (tests/examples.py says how counts scale).

`ci` (the default) is derandomized: the same examples on every run, so a failure in CI is a
failure on every machine. `thorough` draws four times as many, derandomized too (the thorough
step of `.ci/run` runs every property test with it). `dev` draws ten times as many fresh examples
each run; select it with `HYPOTHESIS_PROFILE=dev .venv/bin/python -m pytest tests/unit/test_engine_agrees.py`.
Tests size their example counts relative to the profile (`tests.examples.examples`), never absolutely.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from hypothesis import HealthCheck, settings

from tests.examples import DEFAULT_RUN

settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=DEFAULT_RUN,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", derandomize=True, database=None, deadline=None, max_examples=4 * DEFAULT_RUN,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", deadline=None, max_examples=10 * DEFAULT_RUN,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config):
    """The first process of a run (the one that starts pytest-xdist's workers, or the only one)
    makes the folder the run's processes share what they computed in (`tests/run_cache.py`);
    the workers inherit its name. Before it starts workers it compiles the tests once for them
    (`_compile_tests_once`)."""
    from tests import run_cache

    if not hasattr(config, "workerinput"):
        config.batchtui_run_cache = tempfile.mkdtemp(prefix="batchtui-tests-")
        os.environ[run_cache.FOLDER_VARIABLE] = config.batchtui_run_cache
        if (config.getoption("numprocesses", None) or 0) and config.getoption("dist", "no") != "no":
            _compile_tests_once(config)


def _compile_tests_once(config) -> None:
    """In a fresh clone every test process compiled the project and rewrote the asserts of every
    test module itself, all at once, before any of them had cached the result: about 2.5 s of CPU
    each, four times over (a third of the workers' start). Here the first process does it once,
    in two processes, and caches it where each worker looks (pytest's own rewritten-module cache
    beside each test file; the usual __pycache__ for the rest). Already cached: nothing to do.
    Uses pytest's assertion-rewriting functions, which are not public (pytest is pinned below
    8.5): if they move, this does nothing and the workers compile as before."""
    import multiprocessing
    import sys
    from concurrent.futures import ProcessPoolExecutor
    from pathlib import Path

    try:
        from _pytest.assertion.rewrite import PYC_TAIL, assertstate_key, get_cache_dir
    except ImportError:
        return
    if sys.dont_write_bytecode or config.stash.get(assertstate_key, None) is None:
        return
    root = Path(__file__).resolve().parent.parent
    sources = [path for folder in ("batchtui", "sim", "steps", "tests") for path in (root / folder).rglob("*.py")]
    todo = [path for path in sources if not _compiled(path, PYC_TAIL, get_cache_dir)]
    if not todo:
        return
    global _CONFIG
    _CONFIG = config  # (the forked processes inherit it)
    try:
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
            list(pool.map(_compile_one, todo, chunksize=8))
    except Exception:  # noqa: BLE001 (the workers compile what is not cached, as before)
        pass
    finally:
        _CONFIG = None


_CONFIG = None


def _is_test_module(path) -> bool:
    return path.name == "conftest.py" or path.name.startswith("test_") or path.name.endswith("_test.py")


def _compiled(path, pyc_tail: str, cache_dir) -> bool:
    import importlib.util

    if _is_test_module(path):
        return (cache_dir(path) / (path.name[:-3] + pyc_tail)).exists()
    return os.path.exists(importlib.util.cache_from_source(str(path)))


def _compile_one(job) -> None:
    import py_compile

    from _pytest.assertion.rewrite import PYC_TAIL, _rewrite_test, _write_pyc, assertstate_key, get_cache_dir

    config, path = _CONFIG, job
    if not _is_test_module(path):
        py_compile.compile(str(path), doraise=False, quiet=2)
        return
    cache = get_cache_dir(path)
    cache.mkdir(exist_ok=True)
    source_stat, code = _rewrite_test(path, config)
    _write_pyc(config.stash[assertstate_key], code, source_stat, cache / (path.name[:-3] + PYC_TAIL))


def pytest_unconfigure(config):
    folder = getattr(config, "batchtui_run_cache", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def _parse_each_stylesheet_once() -> None:
    """Textual parses an app's CSS (its own and every widget's DEFAULT_CSS) into rule sets once
    per app and keeps them on that app's stylesheet; the app tests start hundreds of apps in a
    process, and the parse took tens of milliseconds of each. The same text with the same
    variables (the theme's) gives the same rules, which Textual's own cache already hands to
    every parse of one stylesheet: here one table in the test process holds them for every app.
    A CSS error is raised as before and nothing is kept for it. (The app itself parses its CSS
    once per run.)"""
    from textual.css.stylesheet import Stylesheet

    parse = Stylesheet._parse_rules
    parsed: dict[tuple, list] = {}
    # The variables stand in the key as a number, worked out once per variables dict: an app
    # parses some fifty sheets with one, and sorting and hashing its ~170 entries for each parse
    # cost over a percent of the whole run. Textual replaces the dict when the theme changes and
    # never edits it in place; the last few dicts are kept alive here, so an id is not reused
    # while it is remembered.
    numbers: dict[tuple, int] = {}
    recent: dict[int, tuple[dict, int]] = {}

    def variables_number(variables: dict) -> int:
        known = recent.get(id(variables))
        if known is None or known[0] is not variables:
            if len(recent) >= 8:
                recent.pop(next(iter(recent)))
            number = numbers.setdefault(tuple(sorted(variables.items())), len(numbers))
            known = recent[id(variables)] = (variables, number)
        return known[1]

    def parse_once(self, css, read_from, is_default_rules=False, tie_breaker=0, scope=""):
        key = (css, read_from, is_default_rules, tie_breaker, scope, variables_number(self._variables))
        rules = parsed.get(key)
        if rules is None:
            rules = parsed[key] = parse(self, css, read_from, is_default_rules, tie_breaker, scope)
        return rules

    Stylesheet._parse_rules = parse_once


def _import_every_project_module() -> None:
    """Every module of batchtui, sim and steps imported now, in every test process.

    Hypothesis (6.13x and later) draws examples partly from the constants of the project's modules
    loaded when a property test runs (`sys.modules`, test files excluded). Modules that tests import
    lazily (a command's module when a test runs it) made that pool depend on which tests a process
    had run before: a derandomized property drew other examples in a pytest-xdist worker than in a
    single process, and could draw others from one run to the next. With every module loaded
    first, the pool, and so the examples, are the same in every process and every run."""
    import importlib
    import pkgutil

    import batchtui
    import sim
    import steps

    for package in (batchtui, sim, steps):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not module.name.endswith(".__main__"):  # (running it is what importing it does)
                importlib.import_module(module.name)


def pytest_collection_finish(session):
    """The collector settled as the app settles it (`batchtui.gc_policy`): the imports and the
    test modules frozen, the young generation grown to 10,000 objects. With Python's defaults the
    collector took about 15 % of a test process's CPU (measured on the claims and goals tests):
    full collections walked every cached run and sweep again."""
    from batchtui import gc_policy

    _import_every_project_module()
    _parse_each_stylesheet_once()
    gc_policy.settle()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """Everything still alive frozen too, so the collections pytest runs at exit (five, looking for
    finalizers that raise) walk only what dies from here: with a worker's caches of runs and
    sweeps still tracked they took over the 5 s that execnet gives a worker to end, and it
    interrupted them. Garbage made in a test is collected (and reported) long before this."""
    import gc

    gc.freeze()


WALL_CLOCK_GROUPS = ("terminals", "servers")
"""The kinds of wall-clock test (`@pytest.mark.wall_clock(KIND)`): the app on a real terminal or
in a browser, and servers at a time scale with their clients. Each kind is an xdist group."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Tests marked `wall_clock(KIND)` (servers at a time scale, real terminals, a browser: they
    mostly wait) are grouped by kind, an `xdist_group` each ("wall_clock-terminals",
    "wall_clock-servers"): under pytest-xdist's `--dist loadgroup` one test process runs a
    group's tests one after another, and the two groups wait side by side while the other
    processes keep both cores busy with CPU-bound tests. (All in one group, its 250 s of waiting
    set the run's length; spread over every process, as the first tests of each, they all
    waited at once at the start of a run and left a core idle.) A module's shared fixture
    (test_serve.py's server) is started once, on its group's process. The groups are dealt out
    first, the largest first (claims, calibrate, the wall-clock groups), each to a process of its
    own; then the tests marked `heavy`, then the rest. Run before xdist reads the groups (its hook
    is trylast); the order of the tests is otherwise kept."""
    for item in items:
        marker = item.get_closest_marker("wall_clock")
        if marker is None:
            continue
        kind = marker.args[0] if marker.args else None
        if kind not in WALL_CLOCK_GROUPS:
            raise pytest.UsageError(f"{item.nodeid}: wall_clock takes one of {', '.join(WALL_CLOCK_GROUPS)}, "
                                    f"not {kind!r}")
        item.add_marker(pytest.mark.xdist_group(f"wall_clock-{kind}"))
    # Heavy tests first (the order is otherwise kept): pytest-xdist deals the tests out in this
    # order, after the groups, as processes run short of work, so the long ones start while the
    # others still have work beside them. Last in the collection (tests/unit/test_sustained.py's
    # 40-70 s test, dealt out as one of the last tests), one left a single process working for
    # the last minute of the run while the other three had finished.
    items[:] = sorted(items, key=lambda item: item.get_closest_marker("heavy") is None)
