"""The garbage collector's pauses in the tutorial at top speed, with Python's default settings
and with batchtui's (`batchtui.gc_policy.settle`, which the app runs after its first frame).

Each run is a fresh process: the app opens a step headless (80x24), and 300 frames of 3
simulated seconds each (10 frames a second at 30x: half a minute of a learner's top speed) go
through the app's own frame handling and drawing. Every collection is timed by a `gc.callbacks`
hook. A key pressed during a collection waits for it, so the longest pause is the figure that
matters; the total is the collector's share of the work.

    python benchmarks/gc_pauses.py                 # steps 5, 9, 12 and 20
    python benchmarks/gc_pauses.py --steps 5 --frames 600
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure(step: int, frames: int, settled: bool) -> dict:
    pauses: list[tuple[float, int]] = []
    started = [0.0]

    def hook(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append((time.perf_counter() - started[0], info["generation"]))

    import steps as lessons
    from batchtui import gc_policy
    from batchtui.app import BatchApp
    from batchtui.progress import Progress, ProgressStore
    from batchtui.settings import AppSettings
    from tests.app.manual_clock import ManualClock  # nothing moves unless told: frames on demand

    async def run() -> float:
        with tempfile.TemporaryDirectory() as state:
            ProgressStore(Path(state)).save(Progress())
            app = BatchApp(lessons.open_lessons(), AppSettings(clock=ManualClock(), cursor_blink=False, state_dir=Path(state),
                                             start_step=step))
            async with app.run_test(size=(80, 24)) as pilot:
                await pilot.pause()
                screen = app.screen
                if screen.step.activity.kind == "predict":
                    await pilot.press("1")  # a prediction's run starts with a guess
                    await pilot.pause()
                if settled:
                    gc_policy.settle()  # as the app does after its first frame
                gc.callbacks.append(hook)
                cpu = time.process_time()
                for _ in range(frames):
                    screen.sim.fast_forward(3.0)
                    await pilot.pause()
                cpu = time.process_time() - cpu
                gc.callbacks.remove(hook)
                return cpu

    cpu = asyncio.run(run())
    return {"cpu": cpu, "total": sum(p for p, _ in pauses), "count": len(pauses),
            "full": sum(1 for _, g in pauses if g == 2), "longest": max((p for p, _ in pauses), default=0.0)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="5,9,12,20")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # "STEP,settled|default": a child's run
    args = parser.parse_args()
    if args.one:
        step, mode = args.one.split(",")
        print(json.dumps(measure(int(step), args.frames, mode == "settled")))
        return 0
    print(f"{'step':<5} {'settings':<9} {'collections':>11} {'full':>5} {'longest':>9} {'total':>8} {'share of CPU':>13}")
    for step in (int(s) for s in args.steps.split(",")):
        for mode in ("default", "settled"):
            out = subprocess.run([sys.executable, __file__, "--one", f"{step},{mode}", "--frames", str(args.frames)],
                                 capture_output=True, text=True, check=True, cwd=ROOT)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{step:<5} {mode:<9} {r['count']:>11} {r['full']:>5} {r['longest'] * 1000:>6.0f} ms "
                  f"{r['total']:>6.2f} s {r['total'] / r['cpu'] * 100:>12.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
