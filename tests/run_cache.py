"""What one test process computed, shared with the others of the same run (pytest-xdist).

The lessons (`shared_steps`) and the rate sweeps (`sweeps_once`) are pure functions of the
package's files and their arguments, and every test process computed the same ones: about 1.5 s
of CPU for the lessons and 1-1.5 s a sweep, in each of three processes. Here the first process to
ask computes a value and leaves it, pickled, in a folder the whole run shares; the others wait
for it (a lock per key) and read it. The folder is made when the run starts
(`tests/conftest.py`) and removed when it ends; a process outside such a run (a test module run
on its own with plain `python`) computes for itself.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

_HELD: set[str] = set()
"""Keys this process holds the lock of (computing them)."""

FOLDER_VARIABLE = "BATCHTUI_TEST_RUN_CACHE"
"""Names the run's folder; set by the first pytest process (the one that starts the workers)."""


def folder() -> Path | None:
    name = os.environ.get(FOLDER_VARIABLE)
    return Path(name) if name and Path(name).is_dir() else None


def shared(key: str, compute: Callable[[], Any]) -> Any:
    """`compute()`, or what another process of this run got from it for the same `key`.

    Whoever holds a key's lock computes or reads it; a value is written to a temporary file and
    renamed into place, so a reader never sees half of one. An error in `compute` is raised here
    and nothing is left for the key: the next process to ask computes it again."""
    where = folder()
    if where is None or key in _HELD:
        # (A key this process is computing asked for again inside its computation: its lock is
        # taken, by this process, so compute it here.)
        return compute()
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    path = where / f"{digest}.pickle"
    with open(where / f"{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            with open(path, "rb") as f:
                return pickle.load(f)
        _HELD.add(key)
        try:
            value = compute()
        finally:
            _HELD.discard(key)
        partial = where / f"{digest}.{os.getpid()}.partial"
        with open(partial, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, path)
        return value
