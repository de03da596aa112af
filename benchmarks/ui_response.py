"""How soon the tutorial answers a key, over a terminal: runs `batchtui` on a pseudo-terminal at
80x24 and times, from the key's bytes to the first frame that shows its effect,

  - a GPU, model or hardware dial change (goal: under 0.2 s), and
  - a step change, also into a step whose curve sweeps (goal: under 0.3 s; the sweep may fill
    in after, the curve says "sweeping" meanwhile, as a drill's question measured from runs
    says "Drawing a question..." until it comes).

The machine is shared, so each figure is also given as a ratio to a yardstick timed in this run
(a fixed pure-Python loop): compare ratios between runs, not seconds.

    python benchmarks/ui_response.py              # 3 rounds of each
    python benchmarks/ui_response.py --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app_benchmark import FIRST_FRAME_MARK, PtyApp  # noqa: E402  (the same pty harness)

from batchtui.progress import Progress, ProgressStore  # noqa: E402

RIGHT, DOWN, TAB = b"\x1b[C", b"\x1b[B", b"\t"


def yardstick() -> float:
    """Seconds for a fixed amount of pure-Python work: what "slow" means on this machine now."""
    start = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i % 7
    return time.perf_counter() - start


# name, step opened, keys that reach the control, the key timed, what its first frame shows, goal (s)
CASES = (
    ("GPU dial (step 2)", 2, (TAB, TAB), RIGHT, b"h200", 0.2),
    ("model dial (step 2)", 2, (TAB, TAB, DOWN), RIGHT, b"llama-3.2-3b", 0.2),
    ("GPU dial (playground)", 20, (TAB, DOWN), RIGHT, b"h200", 0.2),
    ("KV cache dtype (playground)", 20, (TAB, DOWN, DOWN, DOWN, DOWN), RIGHT, b"fp8", 0.2),
    # A step's goal line is drawn last, once its text, dials, activity and views are in place.
    ("step 5 -> 6", 5, (), b"n", b"Make each limit bind", 0.3),
    ("step 6 -> 7: screen", 6, (), b"n", b"press 1-4", 0.3),
    ("step 6 -> 7: sweeping shown", 6, (), b"n", b"sweeping", 0.3),
    ("step 15 -> 16: screen", 15, (), b"n", b"Traffic per replica", 0.3),
    ("step 15 -> 16: its drill's question", 15, (), b"n", b"in replicas", 3.0),
)


def time_case(step: int, reach: tuple[bytes, ...], key: bytes, mark: bytes) -> float | None:
    with tempfile.TemporaryDirectory() as state:
        ProgressStore(Path(state) / "batchtui").save(Progress(current_step=step))  # no orientation
        command = [sys.executable, "-m", "batchtui.tui", "--step", str(step)]
        app = PtyApp(command, 80, 24, state)
        try:
            if app.wait_for(FIRST_FRAME_MARK, timeout=15) is None:
                raise SystemExit(f"no frame within 15 s; last output: {app.buffer[-400:]!r}")
            app.drain(1.5)  # the simulation (and any sweep) started
            for k in reach:
                app.send(k)
                app.drain(0.3)
            app.drain(0.5)
            app.started = time.perf_counter()
            app.send(key)
            return app.wait_for(mark, timeout=5)
        finally:
            app.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    stick = min(yardstick() for _ in range(3))
    print(f"yardstick (1M-step Python loop): {stick * 1000:.0f} ms")
    print(f"{'what':<30} {'median':>8} {'worst':>8} {'÷ yardstick':>12} {'goal':>6}")
    for name, step, reach, key, mark, goal in CASES:
        times = [time_case(step, reach, key, mark) for _ in range(args.rounds)]
        seen = [t for t in times if t is not None]
        if not seen:
            print(f"{name:<30} {'never':>8}")
            continue
        median = statistics.median(seen)
        print(f"{name:<30} {median * 1000:>6.0f} ms {max(seen) * 1000:>5.0f} ms {median / stick:>12.2f} "
              f"{goal:>5.1f}s" + ("" if len(seen) == len(times) else f"  ({len(times) - len(seen)} never shown)"))
    stick_after = min(yardstick() for _ in range(3))
    print(f"yardstick again: {stick_after * 1000:.0f} ms (a big change means the machine got busier)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
