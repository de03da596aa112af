"""Pilot tests run the app with a stand-in lesson list, a manual clock (nothing moves until the
test moves it), and state in tmp_path that has seen the first-launch orientation."""

from __future__ import annotations

import pytest

from batchtui.app import BatchApp
from batchtui.progress import Progress, ProgressStore
from batchtui.settings import AppSettings
from manual_clock import ManualClock
from standin import make_steps
from tests.sweeps_once import _rate_sweeps_once  # noqa: F401 (each rate sweep once a run)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch, tmp_path):
    # The developer's own state and colour settings must not leak into tests.
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))


@pytest.fixture
def state_dir(tmp_path):
    return tmp_path / "state"


@pytest.fixture
def make_app(state_dir):
    """`make(steps=None, first_launch=False, **settings)`: the app on those steps. Unless
    `first_launch`, a progress file is there already, so the orientation does not cover the step."""

    def make(steps=None, first_launch: bool = False, **settings) -> BatchApp:
        if not first_launch and not (state_dir / "progress.json").exists():
            ProgressStore(state_dir).save(Progress())
        options = {"clock": ManualClock(), "cursor_blink": False, "state_dir": state_dir, **settings}
        return BatchApp(steps if steps is not None else make_steps(), AppSettings(**options))
    return make
