"""The test run's shared cache (`tests/run_cache.py`): a value computed once per run, read by the
run's other processes, never half-written, and a key asked for inside its own computation does
not wait for itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import run_cache

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(run_cache.FOLDER_VARIABLE, str(tmp_path))
    return tmp_path


def test_a_value_is_computed_once_and_read_by_another_process(run_folder):
    calls = []
    assert run_cache.shared("k", lambda: calls.append(1) or {"v": 1}) == {"v": 1}
    assert run_cache.shared("k", lambda: calls.append(1) or {"v": 2}) == {"v": 1}
    assert calls == [1]
    code = "from tests import run_cache; print(run_cache.shared('k', lambda: 'computed again'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=True)
    assert out.stdout.strip() == "{'v': 1}"
    assert not list(run_folder.glob("*.partial"))


def test_a_key_asked_for_inside_its_own_computation_is_computed_there(run_folder):
    assert run_cache.shared("outer", lambda: run_cache.shared("outer", lambda: 3) + 1) == 4
    assert run_cache.shared("outer", lambda: 0) == 4


def test_an_error_leaves_nothing_for_the_key(run_folder):
    def broken():
        raise ValueError("no")

    with pytest.raises(ValueError):
        run_cache.shared("e", broken)
    assert run_cache.shared("e", lambda: 5) == 5


def test_outside_a_run_each_call_computes(monkeypatch):
    monkeypatch.delenv(run_cache.FOLDER_VARIABLE, raising=False)
    assert run_cache.shared("x", lambda: 1) == 1
    assert run_cache.shared("x", lambda: 2) == 2
