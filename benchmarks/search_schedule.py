"""Where `search_benchmark.py`'s 512-point search spends its CPU, and what it would take on two
idle workers, measured on a busy machine: the search runs in this process with `--jobs 1`, each
screen task and each unit of the confirmation and router checks (`sim.search.run_unit`: a run of
the seeds' searches, a confirmation run, a router check) timed in CPU seconds of its own thread.
Prints each stage's CPU, runs and tasks, and the two workers' schedule worked out from those
times: the screen's tasks in the order sent (loosest caps first); the confirmation and router
checks as whole tasks, a point a task and a stage after the other (one worker idles while the
longest point runs alone), and as chains (`sim.search` units handed out one by one, each point's
router check straight after its confirmation: what `batchtui search` does with worker processes),
with each stage's idle worker seconds. CPU time is what a task takes on an idle core, so the
schedule is the wall time of an idle machine (the command's own work between runs left out; with
one worker every screen finished before the next starts, so a few more screens may be proved
than with two).

    python benchmarks/search_schedule.py
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
from collections import defaultdict
from contextlib import redirect_stdout
from pathlib import Path

from plan_schedule import chains_wall, tasks_wall
from search_benchmark import GRID

from batchtui import gc_policy
from batchtui.cli import main as batchtui, search_stages
from sim import curves, search as s

SCREEN: list[float] = []  # each screen task's seconds, in the order run
PROVED: list[bool] = []
UNITS: dict[tuple, list[tuple[str, float, int, object]]] = defaultdict(list)
"""point -> (kind, seconds, runs, group) of each unit in order; a router check's group is its
replica count (a count's checks, one for each policy, are handed out together)."""


def _point(scenario) -> tuple:
    engine = scenario.engine_config()
    return (scenario.gpu, scenario.tensor_parallel_size, engine.max_num_seqs, engine.max_num_batched_tokens,
            scenario.kv_cache_dtype)


SCREEN_RUNS: list[tuple] = []
"""Each run of the screen: (the point's family, seed, rate, requests, its engine config, CUDA
graph ceiling, `RunSummary.caps`)."""


def _instrument() -> None:
    screen, unit, runner = search_stages.screen_task, s.run_unit, curves.runner
    screening = [False]

    def timed_screen(task):
        start = time.thread_time()
        screening[0] = True
        try:
            out = screen(task)
        finally:
            screening[0] = False
        SCREEN.append(time.thread_time() - start)
        PROVED.append(out[2])
        return out

    def kept_runner(scenario, **options):
        run = runner(scenario, **options)
        if not screening[0]:
            return run
        config = scenario.engine_config()
        family = s.family(s.GridPoint(scenario.gpu, scenario.tensor_parallel_size, 0, 0, scenario.kv_cache_dtype,
                                      config.enable_prefix_caching))
        ceiling = scenario.deployment().gpu.cudagraph_ceiling

        def kept(rate, n):
            summary = run(rate, n)
            SCREEN_RUNS.append((family, scenario.seed, rate, n, config, ceiling, summary.caps))
            return summary
        return kept

    def timed_unit(item):
        start = time.thread_time()
        out = unit(item)
        runs = out[1] if item[0] == "confirm" else 1
        units = UNITS[_point(item[1])]
        units.append((item[0], time.thread_time() - start, runs, item[3] if item[0] == "router" else len(units)))
        return out

    search_stages.screen_task = timed_screen
    s.run_unit = timed_unit
    curves.runner = kept_runner  # (what the screen's runs are made with)


def covered_runs() -> int:
    """The screen's runs that an earlier run of another point of the family, at the same seed,
    rate and length, covers (`sim.config.caps_cover`): those a run-by-run proof would take."""
    from sim.config import caps_cover

    seen: dict[tuple, list] = defaultdict(list)
    count = 0
    for family, seed, rate, n, config, ceiling, caps in SCREEN_RUNS:
        like = seen[(family, seed, rate, n)]
        count += any(other != config and caps_cover(used, other, config, ceiling) for other, used in like)
        like.append((config, caps))
    return count


def _groups(units: list) -> list[list[float]]:
    groups: dict = {}
    for _, seconds, _, group in units:
        groups.setdefault(group, []).append(seconds)
    return list(groups.values())


def main() -> None:
    _instrument()
    gc_policy.settle()  # (as the command and its workers do)
    load = os.getloadavg()[0]
    cpu = time.process_time()
    with tempfile.TemporaryDirectory() as tmp, redirect_stdout(io.StringIO()):
        batchtui(["search", *GRID, "--jobs", "1", "--json", "--output", str(Path(tmp) / "search.jsonl")])
    cpu = time.process_time() - cpu
    print(f"{cpu:.1f} s CPU in all (load average {load:.1f} before, {os.getloadavg()[0]:.1f} after)")
    screen = tasks_wall(SCREEN)
    print(f"screen: {len(SCREEN)} points, {sum(PROVED)} proved from a like point's; {sum(SCREEN):.1f} s; "
          f"two idle workers {screen:.1f} s ({2 * screen - sum(SCREEN):.1f} worker seconds idle); "
          f"{len(SCREEN_RUNS):,} runs ({sum(r[3] == s.SCREEN_PROMPTS for r in SCREEN_RUNS):,} of "
          f"{s.SCREEN_PROMPTS} requests), {covered_runs()} of them covered by a like point's run at the same "
          "rate and length")
    confirm = {p: [t for k, t, _, _ in u if k != "router"] for p, u in UNITS.items()}
    router = {p: [t for k, t, _, _ in u if k == "router"] for p, u in UNITS.items()}
    for p, u in UNITS.items():
        kinds = defaultdict(lambda: [0, 0.0, 0])
        for k, t, runs, _ in u:
            kinds[k][0] += 1
            kinds[k][1] += t
            kinds[k][2] += runs
        print(f"  {' '.join(map(str, p))}: " + ", ".join(f"{n} {k} units ({r} runs) {t:.1f} s"
                                                           for k, (n, t, r) in kinds.items()))
    c_cpu, r_cpu = sum(map(sum, confirm.values())), sum(map(sum, router.values()))
    c_whole, r_whole = tasks_wall([sum(v) for v in confirm.values()]), tasks_wall([sum(v) for v in router.values()])
    chained = chains_wall([_groups(u) for u in UNITS.values()])
    print(f"confirmation {c_cpu:.1f} s and router checks {r_cpu:.1f} s of units; two idle workers: a point a task, "
          f"{c_whole:.1f} s + {r_whole:.1f} s ({2 * (c_whole + r_whole) - c_cpu - r_cpu:.1f} worker seconds idle); "
          f"as chains {chained:.1f} s ({2 * chained - c_cpu - r_cpu:.1f} idle)")
    print(f"the search on two idle workers: {screen + c_whole + r_whole:.1f} s a point a task, "
          f"{screen + chained:.1f} s with the chains")


if __name__ == "__main__":
    main()
