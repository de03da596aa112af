"""Snapshot tests: the real twenty lessons, a fixed seed, no clock, no blinking cursor, the theme
pinned (in the app), explicit sizes, and state kept in tmp_path."""

from __future__ import annotations

import pytest

import steps
from batchtui.app import BatchApp
from batchtui.settings import AppSettings


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))


@pytest.fixture(scope="session")
def lessons():
    return steps.load_steps()


@pytest.fixture
def tutorial(lessons, tmp_path):
    """An app opened on step `number`, the simulation advanced `seconds` of simulated time."""

    def make(number: int = 1, **settings) -> BatchApp:
        options = {"autorun": False, "cursor_blink": False, "state_dir": tmp_path / "state",
                   "start_step": number, **settings}
        return BatchApp(list(lessons), AppSettings(**options))

    return make
