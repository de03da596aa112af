"""Runs scenarios headless for the command line: one at a time with a Rich progress bar on stderr
(for runs longer than a moment, when stderr is a terminal and the output is not JSON going to a
pipe), or many at once in worker processes (`Runner.map`, `--jobs`: one `workers.Workers` for
the Runner's block, ended when it ends). Output on stdout is never touched, so `--json` stays
clean.

Without a bar a run is one `Engine.run()` call. With one, the engine is run in slices
(`advance_until(inf, max_iterations)`) sized to take about a fifth of a second each, so the bar
moves without costing the run much. Either way the results are the same, and the same again in
a pool worker: a run depends only on its scenario.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sim.engine import Engine, RunSummary
from sim.scenario import Scenario
from sim.workload import trace_requests

SHOW_AFTER_S = 0.4  # a run shorter than this never shows a bar
SLICE_TARGET_S = 0.2


def expected_requests(scenario: Scenario) -> int | None:
    """How many requests the run will serve, or None if that is not known up front."""
    w = scenario.workload
    if w.arrival == "trace":
        try:
            return len(trace_requests(w))
        except Exception:  # the engine reports a bad trace itself, with file and line
            return None
    return w.num_prompts or None


def show_progress_default(json_output: bool = False) -> bool:
    """A bar on stderr when it is a terminal, except for JSON going to a pipe or a file."""
    if not sys.stderr.isatty():
        return False
    return not (json_output and not sys.stdout.isatty())


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass
class RunResult:
    """One run: its summary (metrics as vllm bench serve names them), the requests that failed
    before the engine served them, and (when asked) each request's token times."""

    summary: RunSummary
    failed: list
    token_times: dict[str, list[float]] | None = None

    @property
    def metrics(self) -> dict:
        return self.summary.metrics

    @property
    def records(self):
        return self.summary.records

    @property
    def iterations(self) -> int:
        return self.summary.iterations


def run_once(scenario: Scenario, profiles=None, *, percentiles=(50, 90, 99), goodput: dict | None = None,
             detailed: bool = False, sink=None, progress: Callable[[int], None] | None = None) -> RunResult:
    """Run one scenario to the end as a `vllm bench serve` client would see it: requests vLLM's
    API server refuses fail and are counted; finished requests are kept as compact columns."""
    engine = Engine(scenario, profiles=profiles, keep_requests=False, api_server=True)
    engine.metrics.finish_sink = sink
    token_times = None
    if detailed:
        token_times = {}
        while (report := engine.step()) is not None:
            for rid in report.emitted:
                token_times.setdefault(rid, []).append(report.tokens_seen_at)
            if progress is not None and report.index % 4096 == 0:
                progress(engine.metrics.completed)
    elif progress is None:
        engine.run()
    else:
        slice_iterations = 256
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
            progress(engine.metrics.completed)
        engine.run()
    summary = engine.summary(percentiles=percentiles, goodput=goodput)
    return RunResult(summary, list(engine.metrics.failed), token_times)


class Runner:
    """Runs scenarios one after another, or many at once in worker processes (`map`); one bar
    covers them all (`total` requests). Use it as a context manager: its workers end with it."""

    def __init__(self, show_progress: bool | None = None, profiles=None) -> None:
        if show_progress is None:
            show_progress = show_progress_default()
        self.show_progress = show_progress
        self.profiles = profiles
        self.runs = 0
        self._progress = None
        self._task = None
        self._done_before = 0  # requests finished by earlier runs under this bar
        self._total: int | None = None
        self._total_given = False  # expect() was called: do not guess from the first run
        self._started = 0.0
        self._description = ""
        self._workers = None  # made by the first map, ended with the block

    def _close_workers(self, kill: bool) -> None:
        if self._workers is not None:
            self._workers.close(kill=kill)
            self._workers = None

    # -- the bar
    def __enter__(self) -> "Runner":
        self._started = time.monotonic()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._close_workers(kill=exc_type is not None)
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def expect(self, total: int | None) -> None:
        """Set how many requests all runs under this bar will serve (None = unknown)."""
        self._total = total
        self._total_given = True
        if self._progress is not None:
            self._progress.update(self._task, total=total)

    def update(self, completed: int, description: str | None = None) -> None:
        """Move the bar to `completed` requests of this run (after those of earlier runs)."""
        if not self.show_progress:
            return
        if description is not None:
            self._description = description
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
            self._task = self._progress.add_task(self._description, total=self._total)
        self._progress.update(self._task, description=self._description,
                              completed=self._done_before + completed)

    def finished(self, completed: int) -> None:
        """Count a run's requests as done (a run made elsewhere, such as in a pool worker)."""
        self._done_before += completed
        self.update(0)

    # -- running
    def run(self, scenario: Scenario, description: str = "simulating", **kwargs) -> RunResult:
        """Run one scenario to the end (see `run_once`)."""
        self.runs += 1
        if self.show_progress and not self._total_given and self.runs == 1:
            self._total = expected_requests(scenario)
        progress = None
        if self.show_progress:
            self.update(0, description)
            progress = self.update
        result = run_once(scenario, self.profiles, progress=progress, **kwargs)
        self._done_before += result.metrics["completed"]
        return result

    def map(self, func: Callable, items: Sequence, jobs: int, *, description: str = "simulating",
            requests: Callable[[object], int] = lambda r: 0) -> list:
        """[func(item) for item in items], in up to `jobs` worker processes (the first call's
        `jobs`, kept for the rest of the Runner's block); the bar moves as results come back
        (`requests(result)` requests each). `func` is a module's top-level function; a result
        depends only on its item."""
        from .workers import Workers

        self.update(0, description)
        if self._workers is None:
            self._workers = Workers(jobs)
        return self._workers.map(func, items, each=lambda result: self.finished(requests(result)))

    def chains(self, func: Callable, chains: Sequence, jobs: int, *, description: str = "simulating") -> list:
        """[chain(run) for chain in chains], the chains at once on up to `jobs` worker processes
        (`workers.Workers.chains`: each chain's items run one after another, `run(item)` giving
        `func(item)`, the workers taking whichever chain's item is ready)."""
        from .workers import Workers

        self.update(0, description)
        if self._workers is None:
            self._workers = Workers(jobs)
        return self._workers.chains(func, chains)
