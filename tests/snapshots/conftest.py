"""Snapshot tests: the real twenty lessons, a fixed seed, a manual clock, no blinking cursor, the
theme pinned (in the app), explicit sizes, and state kept in tmp_path."""

from __future__ import annotations

import pytest

from batchtui.app import BatchApp
from batchtui.progress import Progress, ProgressStore
from batchtui.settings import AppSettings
from tests.app.manual_clock import ManualClock
from tests import shared_steps
from tests.sweeps_once import _rate_sweeps_once  # noqa: F401 (each rate sweep once a run)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))


@pytest.fixture(scope="session")
def lessons():
    return shared_steps.lessons()


@pytest.fixture
def tutorial(lessons, tmp_path):
    """An app opened on step `number`, the simulation advanced `seconds` of simulated time."""

    def make(number: int = 1, first_launch: bool = False, **settings) -> BatchApp:
        state = tmp_path / "state"
        if not first_launch and not (state / "progress.json").exists():
            ProgressStore(state).save(Progress())
        options = {"clock": ManualClock(), "cursor_blink": False, "state_dir": state,
                   "start_step": number, **settings}
        return BatchApp(list(lessons), AppSettings(**options))

    return make
