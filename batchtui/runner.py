"""Runs scenarios headless for the command line, with a Rich progress bar on stderr when a run
takes longer than a moment and stderr is a terminal. Output on stdout is never touched, so
`--json` stays clean.

Without a bar a run is one `Engine.run()` call. With one, the engine is run in slices
(`advance_until(inf, max_iterations)`) sized to take about a fifth of a second each, so the bar moves
without costing the run much.
"""

from __future__ import annotations

import math
import sys
import time

from sim.engine import Engine, RunSummary
from sim.scenario import Scenario
from sim.workload import load_trace

SHOW_AFTER_S = 0.4  # a run shorter than this never shows a bar
SLICE_TARGET_S = 0.2


def expected_requests(scenario: Scenario) -> int | None:
    """How many requests the run will serve, or None if that is not known up front."""
    w = scenario.workload
    if w.arrival == "trace":
        try:
            return len(load_trace(w.trace_path))
        except Exception:  # the engine reports a bad trace itself, with file and line
            return None
    return w.num_prompts or None


class Runner:
    """Runs scenarios one after another; one bar covers them all (`total` requests)."""

    def __init__(self, show_progress: bool | None = None, profiles=None) -> None:
        if show_progress is None:
            show_progress = sys.stderr.isatty()
        self.show_progress = show_progress
        self.profiles = profiles
        self.runs = 0
        self._progress = None
        self._task = None
        self._done_before = 0  # requests finished by earlier runs under this bar
        self._total: int | None = None
        self._total_given = False  # expect() was called: do not guess from the first run
        self._started = 0.0

    # -- the bar
    def __enter__(self) -> "Runner":
        self._started = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def expect(self, total: int | None) -> None:
        """Set how many requests all runs under this bar will serve (None = unknown)."""
        self._total = total
        self._total_given = True
        if self._progress is not None:
            self._progress.update(self._task, total=total)

    def _update(self, description: str, completed: int) -> None:
        if not self.show_progress:
            return
        if self._progress is None:
            if time.monotonic() - self._started < SHOW_AFTER_S:
                return
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                                       TextColumn, TimeElapsedColumn)
            self._progress = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                MofNCompleteColumn(), TextColumn("requests"), TimeElapsedColumn(),
                console=Console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task(description, total=self._total)
        self._progress.update(self._task, description=description,
                              completed=self._done_before + completed)

    # -- running
    def run(self, scenario: Scenario, description: str = "simulating") -> RunSummary:
        """Run one scenario to the end and return its summary."""
        engine = Engine(scenario, profiles=self.profiles)
        self.runs += 1
        if not self.show_progress:
            summary = engine.run()
        else:
            if not self._total_given and self.runs == 1:
                self._total = expected_requests(scenario)
            summary = self._run_in_slices(engine, description)
        self._done_before += summary.metrics["completed"]
        return summary

    def _run_in_slices(self, engine: Engine, description: str) -> RunSummary:
        slice_iterations = 256
        self._update(description, 0)
        while not engine.done:
            t0 = time.perf_counter()
            before = engine.iteration
            engine.advance_until(math.inf, slice_iterations)
            if engine.iteration == before and not engine.done:
                break  # nothing advanced: let run() finish (or raise) on its own
            elapsed = time.perf_counter() - t0
            if elapsed < SLICE_TARGET_S / 2:
                slice_iterations *= 2
            elif elapsed > SLICE_TARGET_S * 2 and slice_iterations > 64:
                slice_iterations = max(64, int(slice_iterations * SLICE_TARGET_S / elapsed))
            self._update(description, engine.metrics.completed)
        return engine.run() if not engine.done else engine.summary()
