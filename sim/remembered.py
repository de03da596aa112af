"""The last results of a pure, costly measurement of a scenario, kept per process (`Remembered`):
the curves' sweeps, steady points and saturations (`sim.curves`), which a learner's revisits and
drills read again."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable

from .scenario import Scenario

__all__ = ["Remembered"]


class Remembered:
    """The last `size` results of a pure, costly measurement of a scenario, kept per process.

    Keyed by the scenario's repr and the other arguments (a scenario equal to the one kept is
    required too: two scenarios may print alike) and by the size and modification time of each
    file the scenario reads (profiles, a model's config, a trace or dataset: one edited since is
    measured again); a result being measured in another thread is waited for, not measured
    twice; a failed measurement is not kept. Results are shared: their readers must not change
    them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict[tuple, tuple[Scenario, object]] = OrderedDict()
        self._pending: dict[tuple, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, scenario: Scenario, key: tuple, measure: Callable[[], object]):
        key = (repr(scenario), _files_read(scenario)) + key
        while True:
            with self._lock:
                kept = self._kept.get(key)
                if kept is not None and kept[0] == scenario:
                    self._kept.move_to_end(key)
                    return kept[1]
                pending = self._pending.get(key)
                if pending is None:
                    pending = self._pending[key] = threading.Event()
                    break
            pending.wait()  # another thread is measuring it (or one with the same repr): look again
        try:
            result = measure()
            with self._lock:
                self._kept[key] = (scenario, result)
                self._kept.move_to_end(key)
                while len(self._kept) > self.size:
                    self._kept.popitem(last=False)
        finally:
            with self._lock:
                del self._pending[key]
            pending.set()
        return result


def _files_read(scenario: Scenario) -> tuple:
    """(path, size, modification time) of each file the scenario reads; None for one missing."""
    out = []
    for path in scenario.named_files().values():
        try:
            st = os.stat(path)
        except OSError:
            out.append((path, None))
        else:
            out.append((path, st.st_size, st.st_mtime_ns))
    return tuple(out)
