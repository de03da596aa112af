"""How soon the tutorial answers a key while its simulation runs at top speed: runs `batchtui`
on a pseudo-terminal at 80x24, opens a step, presses `+` until the top speed (30x), lets it run,
then times `?` (the help opens), Escape (it closes), Tab (the answer box or the dials take the
keys, as the footer says), Escape (back to the lesson), n (the next step's header shows) and,
with that step at top speed too, p (back), each from the key's bytes to the first frame that
shows it. Goal: under 0.1 s each, idle or loaded.

With `--load N` (default: a run with none, then one with 2) it starts N busy processes
(`yes > /dev/null`, as on a shared box) for the loaded run and stops them afterwards. The
simulated time shown is read too: at top speed the clock may fall behind real time x 30, and
the status line says so ("CPU busy").

    python benchmarks/top_speed_keys.py                  # steps 4 and 8, idle then loaded by 2
    python benchmarks/top_speed_keys.py --steps 4 --rounds 5 --loads 0,2
    python benchmarks/top_speed_keys.py --steps all --rounds 2 --loads 2 --no-paused   # every step, loaded
"""

from __future__ import annotations

import argparse
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app_benchmark import FIRST_FRAME_MARK, PtyApp  # noqa: E402  (the same pty harness)

import steps as lessons  # noqa: E402
from batchtui.progress import Progress, ProgressStore  # noqa: E402

STEPS = lessons.load_steps()
PREDICTS = {s.number for s in STEPS if s.activity.kind == "predict"}

ESC, TAB = b"\x1b", b"\t"
TOP_SPEED_PRESSES = 8  # 1x -> 30x
# name, key, what the first frame after it shows
KEYS = (
    ("? opens the help", b"?", b"Every key"),
    ("Esc closes it", ESC, b"/20"),
    ("Tab leaves the lesson", TAB, b"esc le"),  # (the footer: a dial or the answer box has the keys,
    #  "esc lesson" or "esc leave")
    ("Esc goes back to it", ESC, b"n next"),
)
CSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]")
"""A terminal control sequence (styles, cursor moves): taken out before a mark is looked for,
as the footer's keys and labels are written in different styles."""


def busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(n)]


STATUS_CLOCK = re.compile("· t ([\\d.]+) s".encode())
"""The status line's clock ("running 30x · t 122.6 s · iter 20k", or without the iterations where
the column is narrow): a lesson's text may say "at t 62 s" too, which read as the clock made the
speed come out 1x or negative."""


def sim_times(text: bytes) -> list[float]:
    return [float(t) for t in STATUS_CLOCK.findall(CSI.sub(b"", text).replace(b",", b""))]


def read_all(app: PtyApp, seconds: float) -> bytes:
    """Everything written over `seconds` (the harness keeps only the tail)."""
    out = b""
    end = time.perf_counter() + seconds
    while (left := end - time.perf_counter()) > 0:
        ready, _, _ = select.select([app.master], [], [], left)
        if ready:
            out += os.read(app.master, 65536)
    return out


def wait_for_text(app: PtyApp, mark: bytes, timeout: float) -> float | None:
    """Seconds from `app.started` until `mark` shows in the output, styles aside."""
    seen = b""
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        ready, _, _ = select.select([app.master], [], [], 0.02)
        if ready:
            seen = (seen + os.read(app.master, 65536))[-65536:]
            if mark in CSI.sub(b"", seen):
                return time.perf_counter() - app.started
    return None


STEP_KEYS = ("n: the next step shows", "p: back again")


def run(step: int, rounds: int, paused: bool = False, steps_too: bool = True) -> tuple[dict[str, list[float | None]], str]:
    times: dict[str, list[float | None]] = {name: [] for name in (*[k[0] for k in KEYS], *STEP_KEYS)}
    speed = ""
    with tempfile.TemporaryDirectory() as state:
        ProgressStore(Path(state) / "batchtui").save(Progress(current_step=step))  # no orientation
        command = [sys.executable, "-m", "batchtui.tui", "--step", str(step)]
        app = PtyApp(command, 80, 24, state)
        try:
            if app.wait_for(FIRST_FRAME_MARK, timeout=20) is None:
                raise SystemExit(f"no frame within 20 s; last output: {app.buffer[-400:]!r}")
            app.drain(1.0)
            if step in PREDICTS:
                app.send(b"1")  # a prediction: the run starts with a guess
            app.send(b"+" * TOP_SPEED_PRESSES if not paused else b" ")
            app.drain(3.0)
            first = read_all(app, 0.5)
            w0 = time.perf_counter()
            last = read_all(app, 3.0)
            w1 = time.perf_counter()
            t0, t1 = sim_times(first), sim_times(last)
            if t0 and t1 and not paused:
                speed = f"{(t1[-1] - t0[-1]) / (w1 - w0):.1f}x"
            if not paused and not (t0 and t1):
                speed = "clock still"  # a job of fixed length (step 17) finishes within seconds at 30x
            if b"CPU busy" in last:
                speed += " (says CPU busy)"
            for _ in range(rounds):
                for name, key, mark in KEYS:
                    app.started = time.perf_counter()
                    app.send(key)
                    times[name].append(wait_for_text(app, mark, timeout=15))
                    app.drain(0.3)
                if not steps_too:
                    continue
                # A step change from a run at top speed (step 20 goes back first), and back.
                there = step + 1 if step < len(STEPS) else step - 1
                for key, to in ((b"n" if there > step else b"p", there), (b"p" if there > step else b"n", step)):
                    name = STEP_KEYS[0] if to == there else STEP_KEYS[1]
                    app.started = time.perf_counter()
                    app.send(key)
                    times[name].append(wait_for_text(app, f"Step {to}/{len(STEPS)}".encode(), timeout=15))
                    app.drain(1.0)
                    if to in PREDICTS:
                        app.send(b"1")
                    app.send(b"+" * TOP_SPEED_PRESSES if not paused else b" ")
                    app.drain(2.0)
        finally:
            try:
                app.close()
            except subprocess.TimeoutExpired:  # frozen: deaf to ctrl+q and SIGTERM alike
                os.killpg(app.proc.pid, signal.SIGKILL)
                app.proc.wait()
                speed += " (had to be killed)"
    return times, speed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="4,8", help='comma-separated, or "all"')
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--loads", default="0,2", help="busy processes beside it, one run each")
    parser.add_argument("--no-paused", action="store_true",
                        help="skip the yardstick run (the same keys with the run paused)")
    parser.add_argument("--no-steps", action="store_true", help="time only ?, Esc, Tab and Esc, not n and p")
    args = parser.parse_args()
    names = [name for name, _, _ in KEYS] + ([] if args.no_steps else list(STEP_KEYS))
    print(f"{'step':<5} {'load':>4} {'sim speed':>22}  {'key':<24} {'median':>8} {'worst':>8}  goal 100 ms")
    for load in (int(n) for n in args.loads.split(",")):
        hogs = busy(load)
        try:
            chosen = [s.number for s in STEPS] if args.steps == "all" else [int(s) for s in args.steps.split(",")]
            for step, paused in ((s, p) for s in chosen for p in (True, False)[args.no_paused:]):
                times, speed = run(step, args.rounds, paused, steps_too=not args.no_steps)
                speed = "paused" if paused else speed
                for name in names:
                    seen = [t for t in times[name] if t is not None]
                    never = len(times[name]) - len(seen)
                    if not seen:
                        print(f"{step:<5} {load:>4} {speed:>22}  {name:<24} {'never':>8}")
                        continue
                    print(f"{step:<5} {load:>4} {speed:>22}  {name:<24} {statistics.median(seen) * 1000:>6.0f} ms "
                          f"{max(seen) * 1000:>5.0f} ms" + (f"  ({never} not within 15 s)" if never else ""))
        finally:
            for hog in hogs:
                hog.terminate()
                hog.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
