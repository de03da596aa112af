"""How long the lessons' figures take: a step must open at once, a curve must not keep the
learner waiting.

Prints, with imports already done (numpy and the engine are imported by the app before the first
step's figures anyway), CPU seconds:

1. the time to build each of the twenty steps (`steps.load_step`: front matter, validation and
   every `{{figure}}` filled from the simulator), the first build in the process (what a learner
   waits for: the runs a figure reads are kept after), and the slowest, against the 0.3 s goal;
2. the rate sweeps of the curve view (`batchtui.simulation.rate_sweep`, run in a worker thread by
   the app) for steps 7 and 16, and step 16's at 64 seats (the re-sweep when the seats dial moves);
3. the cheat sheet for the running example and for the L40S, worked again as on a dial move;
4. each time also as a ratio to `sim_benchmark.reference_loop` timed in the same run, so figures
   from a loaded or another machine can be compared.

The process keeps what it computed (the sheet of a scenario, sweeps and saturated rates by
scenario): 2 and 3 are the best of a few runs, each of a scenario not seen before (another seed,
the same cost).

`python benchmarks/lesson_benchmark.py [--repeats N]`
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import steps  # noqa: E402
from batchtui.simulation import rate_sweep  # noqa: E402
from sim_benchmark import best_of, reference_loop  # noqa: E402
from steps.activities import cheat_sheet_md  # noqa: E402

STEP_OPEN_GOAL_S = 0.3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    files = steps.lesson_files()
    steps.load_step(files[0], fill=False)  # warm up: imports, profile tables
    reference = best_of(reference_loop, args.repeats)
    seeds = iter(range(1000, 2000))

    def unseen(scenario):
        """The scenario with a seed the process has not run: nothing of it is kept yet."""
        return scenario.replace(seed=next(seeds))
    print(f"reference loop: {reference:.3f} s")

    def line(what: str, seconds: float, goal: float | None = None) -> None:
        mark = "" if goal is None else ("  ok" if seconds < goal else f"  OVER the {goal:g} s goal")
        print(f"  {what:<38} {seconds * 1000:8.1f} ms  {seconds / reference:6.3f} x reference{mark}")

    print("building each step (figures filled from the simulator):")
    times, lessons = {}, []
    for f in files:
        times[f.name] = best_of(lambda f=f: lessons.append(steps.load_step(f)), 1)
        line(f.name, times[f.name], STEP_OPEN_GOAL_S)
    slowest = max(times, key=times.get)
    print(f"  slowest: {slowest}, {times[slowest] * 1000:.0f} ms; all twenty: {sum(times.values()):.2f} s")

    by_number = {s.number: s for s in lessons}
    print("rate sweeps of the curve view (a worker thread in the app):")
    for number, seats in ((7, None), (16, None), (16, 64)):
        step = by_number[number]
        scenario = step.scenario if seats is None else step.scenario.with_engine(max_num_seqs=seats)
        what = f"step {number}, {len(step.sweep.rates)} rates" + (f", {seats} seats" if seats else "")
        line(what, best_of(lambda: rate_sweep(unseen(scenario), step.sweep.rates, step.sweep.num_prompts),
                           args.repeats))

    print("the cheat sheet (worked again when a dial moves):")
    sheet = by_number[19].scenario
    for what, scenario in (("H100, Llama 3.1 8B", sheet), ("L40S, Llama 3.1 8B", sheet.replace(gpu="l40s"))):
        line(what, best_of(lambda: cheat_sheet_md(unseen(scenario)), args.repeats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
