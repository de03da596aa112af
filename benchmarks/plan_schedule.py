"""What `batchtui plan`'s README example would take on two idle workers, measured on a busy
machine: the plan runs in this process with `--jobs 2` (so its confirmation runs go in pairs, as
with two workers), each task and each run of the seeds' searches timed in CPU seconds of its own
thread, and the two workers' schedule worked out from those times: the seeds' searches as three
whole tasks (one worker idles while the last seed searches alone) and as chains of runs
(`Workers.chains`, what plan does), then each batch of confirmation runs and the router checks a
pair at a time. CPU time is what a task takes on an idle core, so the schedule is the wall time of
an idle machine (the command's own work between runs left out). Prints the answer too.

    python benchmarks/plan_schedule.py
"""

from __future__ import annotations

import heapq
import io
import json
import os
import time
from contextlib import redirect_stdout

from plan_benchmark import PLAN

from batchtui.cli import cmd_plan, main as batchtui
from batchtui.cli import runner as runner_module
from batchtui.cli import workers as workers_module

SEED_RUNS: dict[int, list[float]] = {}  # seed -> its search's runs, in order
BATCHES: list[tuple[str, list[float]]] = []  # (task, each task's seconds) for every other pool call


def _timed(func, seconds: list[float]):
    def run(item):
        start = time.thread_time()
        out = func(item)
        seconds.append(time.thread_time() - start)
        return out

    run.__module__ = func.__module__
    return run


def _instrument() -> None:
    run_task = cmd_plan.run_task
    cmd_plan.run_task = lambda task: _timed(run_task, SEED_RUNS.setdefault(task[0].seed, []))(task)
    pool_map = runner_module.Runner.map

    def timed_map(self, func, items, jobs, **options):
        seconds: list[float] = []
        out = pool_map(self, _timed(func, seconds), items, jobs, **options)
        BATCHES.append((func.__name__, seconds))
        return out

    runner_module.Runner.map = timed_map
    one = workers_module.Workers.__init__
    workers_module.Workers.__init__ = lambda self, jobs: one(self, 1)  # every task here, one at a time


def chains_wall(chains: list[list[list[float]]], workers: int = 2) -> float:
    """Each chain's groups one after another, a group's items side by side, a free worker taking
    the item ready first (the earliest ready, then the chain first given)."""
    free = [0.0] * workers
    ready = [(0.0, i, 0) for i in range(len(chains)) if chains[i]]
    heapq.heapify(ready)
    end = 0.0
    while ready:
        at, i, g = heapq.heappop(ready)
        done = at
        for seconds in chains[i][g]:
            w = min(range(workers), key=free.__getitem__)
            free[w] = max(at, free[w]) + seconds
            done = max(done, free[w])
        end = max(end, done)
        if g + 1 < len(chains[i]):
            heapq.heappush(ready, (done, i, g + 1))
    return end


def tasks_wall(tasks: list[float], workers: int = 2) -> float:
    """Whole tasks, each to the worker free first, in order."""
    free = [0.0] * workers
    for t in tasks:
        free[free.index(min(free))] += t
    return max(free)


def main() -> None:
    _instrument()
    load = os.getloadavg()[0]
    cpu = time.process_time()
    out = io.StringIO()
    with redirect_stdout(out):
        batchtui([*PLAN, "--jobs", "2"])
    cpu = time.process_time() - cpu
    answer = json.loads(out.getvalue())
    chains = [SEED_RUNS[s] for s in sorted(SEED_RUNS)]
    rest = sum(tasks_wall(seconds) for _, seconds in BATCHES)
    counts = {name: sum(len(s) for n, s in BATCHES if n == name) for name, _ in BATCHES}
    print(f"answer {answer['max_rate']!r} req/s, {answer.get('replicas')} replicas; {cpu:.1f} s CPU in all "
          f"(load average {load:.1f} before, {os.getloadavg()[0]:.1f} after)")
    print(f"the seeds' searches: {sum(map(len, chains))} runs, {sum(map(sum, chains)):.1f} s; then "
          + ", ".join(f"{k} x {v}" for k, v in counts.items())
          + f" in {len(BATCHES)} pool calls, {sum(sum(s) for _, s in BATCHES):.1f} s")
    whole, chained = tasks_wall([sum(c) for c in chains]), chains_wall([[[run] for run in c] for c in chains])
    print(f"two idle workers: the seeds as whole tasks {whole:.1f} s, as chains {chained:.1f} s; the rest "
          f"{rest:.1f} s; the plan {whole + rest:.1f} s before, {chained + rest:.1f} s now")


if __name__ == "__main__":
    main()
