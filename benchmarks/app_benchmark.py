"""How fast and how cheap the tutorial is over a terminal: runs the installed `batchtui` command
on a pseudo-terminal, as a learner launches it, and prints time to the first full frame (beside a
yardstick timed in the same run), bytes/s and CPU while animating and while paused, and memory
growth over a run.

    python benchmarks/app_benchmark.py                     # first frame; 80x24 and 120x40, 20 s of animation
    python benchmarks/app_benchmark.py --duration 600      # ten minutes: does memory grow?
    python benchmarks/app_benchmark.py --first-frame-only  # just the launches
    python benchmarks/app_benchmark.py --step 20 --keys z  # the playground, zoomed
    python benchmarks/app_benchmark.py --against OTHER/bin/batchtui  # first frames of two installs, alternating

The yardstick is the smallest Textual app (a Static and a Footer) launched the same way and
alternating with `batchtui`, so the ratio of the two medians holds on a busy machine where
absolute times do not (better still, the ratio of the CPU each used up to its first frame, also
printed: on a busy machine a process waits for a core, the yardstick's share of its time more). Goals: first frame within 1.5x the yardstick (issue 14; issue 40: 2.0x), < 30 KB/s at
80x24 and 10 fps in 256 colours, < 25 % of one core animating, about 0 while paused.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
FIRST_FRAME_MARK = b"next"  # the footer's first key label: the last thing a full frame draws
YARDSTICK_MARK = b"yardstick"
RUN_STATE = re.compile(rb"(running|paused|finished)[^\x1b\r\n]*? t [0-9.,]+ s")
"""The status line over the views (`widgets/sim_status.status_line`): the run's state, then its
clock ("running 1x \xc2\xb7 t 1.28 s", "paused \xc2\xb7 t 20.00 s"). A lesson's own words ("the
run starts paused: press .") are not followed by a clock."""
YARDSTICK = """
from textual.app import App
from textual.widgets import Footer, Static

class Yardstick(App):
    BINDINGS = [("q", "quit", "yardstick")]

    def compose(self):
        yield Static("The smallest Textual app: a Static and a Footer.")
        yield Footer()

Yardstick().run(mouse=False)
"""


class PtyApp:
    """The app on a pseudo-terminal of a given size, its output drained and counted."""

    def __init__(self, command: list[str], cols: int, rows: int, state_dir: str) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = dict(os.environ, TERM="xterm-256color", XDG_STATE_HOME=state_dir)
        env.pop("COLORTERM", None)  # 256 colours, as over a plain SSH session
        env.pop("NO_COLOR", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from their .pyc
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.received = 0
        self.buffer = b""

    def drain(self, seconds: float) -> int:
        """Read for `seconds`; returns the bytes read."""
        end = time.perf_counter() + seconds
        got = 0
        while (left := end - time.perf_counter()) > 0:
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    break
                got += len(chunk)
                self.buffer = (self.buffer + chunk)[-65536:]
        self.received += got
        return got

    def wait_for(self, mark: bytes, timeout: float) -> float | None:
        """Seconds from launch until `mark` appears in the output."""
        seen = b""
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                chunk = os.read(self.master, 65536)
                self.received += len(chunk)
                seen = (seen + chunk)[-65536:]
                if mark in seen:
                    return time.perf_counter() - self.started
        return None

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def run_state(self) -> str | None:
        """The run's state as the status line last showed it ("running", "paused", "finished"),
        or None if no status line has been written since the buffer was last cleared."""
        return run_state(self.buffer)

    def cpu_all_threads(self) -> float:
        """CPU seconds the process has run so far, every thread's (the scheduler's count, to the
        nanosecond: /proc/PID/task/*/schedstat)."""
        total = 0
        for task in os.listdir(f"/proc/{self.proc.pid}/task"):
            try:
                with open(f"/proc/{self.proc.pid}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0])
            except OSError:  # a thread that ended meanwhile
                pass
        return total / 1e9

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def measure(self, seconds: float) -> tuple[float, float]:
        """Bytes/s written and share of one core used over `seconds`."""
        cpu0, t0 = self.cpu_seconds(), time.perf_counter()
        got = self.drain(seconds)
        elapsed = time.perf_counter() - t0
        return got / elapsed, (self.cpu_seconds() - cpu0) / elapsed

    def close(self) -> None:
        try:
            self.send(b"\x11")  # ctrl+q
            self.drain(0.5)
            self.proc.wait(timeout=3)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=3)
        os.close(self.master)


ISSUE_14_RATIO = 1.5
ISSUE_40_RATIO = 2.0
"""The first frame's goals, as a ratio to the yardstick's."""


def run_state(output: bytes) -> str | None:
    """The run's state the last status line in `output` shows (None: no status line in it)."""
    states = RUN_STATE.findall(output)
    return states[-1].decode() if states else None


def set_running(app: PtyApp, running: bool, settle: float) -> str | None:
    """Space (run or pause, `keys.py`) until the status line says the run is `running` or paused;
    returns the state it then shows. A step may open either way: step 6 opens paused, so a space
    pressed to pause it would start it instead."""
    wanted = "running" if running else "paused"
    for _ in range(2):
        if app.run_state() == wanted:
            break
        app.buffer = b""
        app.send(b" ")
        app.drain(settle)
    return app.run_state()


def installed_batchtui() -> str:
    """The `batchtui` console script of this interpreter's environment, as a learner runs it."""
    found = shutil.which("batchtui", path=os.path.dirname(sys.executable))
    if found is None:
        raise SystemExit(f"no batchtui command beside {sys.executable}: pip install . first")
    return found


def first_frame(command: list[str], mark: bytes, cols: int = 80, rows: int = 24) -> tuple[float, float]:
    """Seconds from launch to `mark` on the terminal (fresh state each time: a first launch), and
    the CPU seconds the process had used by then."""
    with tempfile.TemporaryDirectory() as state:
        app = PtyApp(command, cols, rows, state)
        try:
            seconds = app.wait_for(mark, timeout=30)
            cpu = app.cpu_all_threads()
        finally:
            app.close()
    if seconds is None:
        raise SystemExit(f"no frame from {command[0]} within 30 s; last output: {app.buffer[-400:]!r}")
    return seconds, cpu


def compare_first_frames(command: list[str], launches: int) -> dict:
    """Alternate launches of `command` and of the yardstick; medians and their ratio."""
    yardstick = [sys.executable, "-c", YARDSTICK]
    first_frame(yardstick, YARDSTICK_MARK)  # warm-up: byte code written, files in the page cache
    first_frame(command, FIRST_FRAME_MARK)
    ours, theirs = [], []
    for _ in range(launches):
        theirs.append(first_frame(yardstick, YARDSTICK_MARK))
        ours.append(first_frame(command, FIRST_FRAME_MARK))
    cpu = {"batchtui_cpu": statistics.median(c for _, c in ours), "yardstick_cpu": statistics.median(c for _, c in theirs)}
    ours, theirs = [t for t, _ in ours], [t for t, _ in theirs]
    return {"batchtui": statistics.median(ours), "yardstick": statistics.median(theirs),
            "ratio": statistics.median(ours) / statistics.median(theirs),
            "batchtui_all": ours, "yardstick_all": theirs, **cpu,
            "cpu_ratio": cpu["batchtui_cpu"] / cpu["yardstick_cpu"]}


def compare_installs(ours: list[str], theirs: list[str], launches: int) -> dict:
    """Alternate launches of two `batchtui` commands (two installs: before and after a change) to
    their first frames; the medians and fastest of each, and the ratios of ours to theirs."""
    first_frame(ours, FIRST_FRAME_MARK)  # warm-up, as `compare_first_frames`
    first_frame(theirs, FIRST_FRAME_MARK)
    a, b = [], []
    for _ in range(launches):
        a.append(first_frame(ours, FIRST_FRAME_MARK))
        b.append(first_frame(theirs, FIRST_FRAME_MARK))
    out = {}
    for name, runs in (("ours", a), ("theirs", b)):
        out[f"{name}_s"] = statistics.median(t for t, _ in runs)
        out[f"{name}_cpu"] = statistics.median(c for _, c in runs)
        out[f"{name}_cpu_min"] = min(c for _, c in runs)
    out["cpu_ratio"] = out["ours_cpu"] / out["theirs_cpu"]
    out["wall_ratio"] = out["ours_s"] / out["theirs_s"]
    return out


def run(command: list[str], cols: int, rows: int, duration: float, window: float, keys: str = "") -> dict:
    with tempfile.TemporaryDirectory() as state:
        app = PtyApp(command, cols, rows, state)
        try:
            first = app.wait_for(FIRST_FRAME_MARK, timeout=15)
            if first is None:
                raise SystemExit(f"no frame within 15 s; last output: {app.buffer[-400:]!r}")
            # A fresh state folder is a first launch: the orientation overlays the step, and the
            # step's run waits until it closes (any key closes it; this one goes no further).
            app.drain(1.0)
            app.buffer = b""
            app.send(b" ")
            app.drain(2.0)  # settle: the step's simulation starts once it has closed (or waits paused)
            for key in keys:  # `--keys z`: zoomed, for example
                app.send(key.encode())
                app.drain(0.3)
            # Each figure is measured in the state its label names, whichever way the step opens.
            if set_running(app, True, settle=1.0) != "running":
                raise SystemExit(f"the run did not start; status: {app.run_state()}")
            rss_start = app.rss_mb()
            app.buffer = b""
            bytes_anim, cpu_anim = app.measure(window)
            anim_state = app.run_state()
            app.drain(max(0.0, duration - window))
            rss_end = app.rss_mb()
            if set_running(app, False, settle=1.0) != "paused":
                raise SystemExit(f"the run did not pause; status: {app.run_state()}")
            app.buffer = b""
            bytes_idle, cpu_idle = app.measure(min(window, 5.0))
            paused_state = app.run_state()  # (None: nothing redrawn while paused)
        finally:
            app.close()
    return {"size": f"{cols}x{rows}", "first_frame_s": first, "anim_bytes_per_s": bytes_anim,
            "anim_cpu": cpu_anim, "paused_bytes_per_s": bytes_idle, "paused_cpu": cpu_idle,
            "rss_start_mb": rss_start, "rss_end_mb": rss_end, "duration_s": duration,
            "anim_state": anim_state, "paused_state": paused_state}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=20.0,
                        help="seconds of animation per size; memory is compared across it (default 20)")
    parser.add_argument("--window", type=float, default=10.0, help="seconds to measure bytes and CPU over")
    parser.add_argument("--sizes", default="80x24,120x40")
    parser.add_argument("--step", type=int, default=6, help="the step to animate (default 6)")
    parser.add_argument("--fps", type=int, default=10)
    parser.add_argument("--launches", type=int, default=7, help="launches of each app for the first frame (default 7)")
    parser.add_argument("--keys", default="", help="keys to press once the step runs, one by one (z: zoomed)")
    parser.add_argument("--first-frame-only", action="store_true")
    parser.add_argument("--against", metavar="BATCHTUI",
                        help="only the first frame, against another install's batchtui command (before a change, "
                             "say), launches alternating")
    args = parser.parse_args()
    batchtui = installed_batchtui()
    if args.against:
        both = compare_installs([batchtui], [args.against], args.launches)
        print(f"first frame at 80x24, {args.launches} launches each, alternating; load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        for name, command in (("ours", batchtui), ("theirs", args.against)):
            print(f"  {name:<7} {command}: median {both[f'{name}_s']:.3f} s, CPU median {both[f'{name}_cpu']:.3f} s "
                  f"(fastest {both[f'{name}_cpu_min']:.3f} s)")
        print(f"  ours / theirs: CPU {both['cpu_ratio']:.3f}x, time {both['wall_ratio']:.3f}x")
        return 0

    print(f"first frame at 80x24: `{batchtui}` (first launch, step 1) against the yardstick, "
          f"{args.launches} launches each, alternating")
    frames = compare_first_frames([batchtui], args.launches)
    print(f"  batchtui   median {frames['batchtui']:.2f} s   "
          f"({', '.join(f'{t:.2f}' for t in frames['batchtui_all'])})")
    print(f"  yardstick  median {frames['yardstick']:.2f} s   "
          f"({', '.join(f'{t:.2f}' for t in frames['yardstick_all'])})")
    print(f"  ratio      {frames['ratio']:.2f}x   (goals: at most {ISSUE_14_RATIO}x, issue 14; at most "
          f"{ISSUE_40_RATIO}x, issue 40); load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"  CPU to the first frame, every thread: batchtui median {frames['batchtui_cpu']:.3f} s, yardstick "
          f"{frames['yardstick_cpu']:.3f} s, ratio {frames['cpu_ratio']:.2f}x (steadier than the times on a busy "
          f"machine, where each process waits for a core)")
    if args.first_frame_only:
        return 0

    command = [batchtui, "--step", str(args.step), "--fps", str(args.fps)]
    keys = f", then the keys {args.keys!r}" if args.keys else ""
    print(f"\ncommand: {' '.join(command)}   TERM=xterm-256color, no COLORTERM (256 colours){keys}")
    print(f"{'size':>8} {'first frame':>12} {'anim KB/s':>10} {'anim CPU':>9} {'paused B/s':>11} "
          f"{'paused CPU':>11} {'RSS start':>10} {'RSS end':>9}")
    for size in args.sizes.split(","):
        cols, rows = (int(n) for n in size.split("x"))
        r = run(command, cols, rows, max(args.duration, args.window), args.window, args.keys)
        print(f"{r['size']:>8} {r['first_frame_s']:>10.2f} s {r['anim_bytes_per_s'] / 1000:>10.1f} "
              f"{r['anim_cpu'] * 100:>8.1f}% {r['paused_bytes_per_s']:>11.0f} {r['paused_cpu'] * 100:>10.1f}% "
              f"{r['rss_start_mb']:>7.1f} MB {r['rss_end_mb']:>6.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
