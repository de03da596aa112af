"""Pilot tests run the app with a stand-in lesson list, no driver clock, and state in tmp_path."""

from __future__ import annotations

import pytest

from batchtui.app import BatchApp
from batchtui.settings import AppSettings
from standin import make_steps


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
    def make(steps=None, **settings) -> BatchApp:
        options = {"autorun": False, "cursor_blink": False, "state_dir": state_dir, **settings}
        return BatchApp(steps if steps is not None else make_steps(), AppSettings(**options))
    return make
