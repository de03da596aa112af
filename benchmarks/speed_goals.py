"""Issue 40's command-line goals, each from one run, as a user runs the command (a fresh process):

- 100,000 requests (`batchtui sim`, 512 in / 256 out at 30 req/s, the defaults: async scheduling,
  prefix caching, one API server): wall time, goal under 3 s;
- 1,000,000 requests, the same traffic: wall time and peak resident memory, this tree and
  another revision (`--rev`, default ec864c6: main before issue 40's first change, the "today"
  of the issue) alternating, so both see the same load; goal at most 1/3 of the other's time, at
  most 300 MB;
- `plan`'s README example (`--ttft-p99 200 --tpot-p99 25 --peak-rate 100`, 512/256) with
  `--jobs 2`: wall time, goal at most 30 s, and its answer beside the other revision's (they must
  be the same).

The default sweep's goal is `sim_benchmark.py --goal`'s, search's `search_benchmark.py`'s and the
first frame's `app_benchmark.py --first-frame-only`'s. Each line ends with the load average. On a
machine shared with other work wall time measures the load: the single-process runs are judged by
their CPU time (what their wall time is on an otherwise idle core), the two revisions by the
ratio of their CPU times; plan, whose two workers run in parallel, by its wall time, its CPU time
printed beside it.

    python benchmarks/speed_goals.py [--rev ec864c6] [--skip-million] [--skip-plan]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from plan_benchmark import PLAN, checkout
from sim_time_memory import CHILD

HERE = Path(__file__).resolve().parent.parent
BEFORE = "ec864c6"
"""main before issue 40's first change (the issue's "today")."""
TRAFFIC = ["--request-rate", "30", "--input-len", "512", "--output-len", "256"]
GOAL_100K_S = 3.0
GOAL_MILLION_RATIO = 1 / 3
GOAL_MILLION_MB = 300
GOAL_PLAN_S = 30.0


def run(tree: Path, argv: list[str], answer: bool = False) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (the child's own and its worker processes'), the child's own
    peak resident memory (MB) and its output (with `answer`, `--json`'s: a `sim` run's lists every
    request's figures, so runs are timed without it) for `batchtui argv` run from `tree` in a
    fresh process of its own session. Workers are started by a fork server that outlives their
    accounting, so their CPU is read from /proc while they run (every POLL_S; a worker's last
    moments, idle in its pool, may be missed)."""
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", CHILD, *argv, *(["--json"] if answer else [])],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tree,
                             start_new_session=True,
                             env={**os.environ, "PYTHONPATH": str(tree), "BATCHTUI_NO_PROGRESS": "1"})
    workers: dict[int, float] = {}
    with ThreadPoolExecutor(1) as pool:
        output = pool.submit(child.communicate)
        while not output.done():
            workers.update(session_cpu(child.pid))
            time.sleep(POLL_S)
        out, err = output.result()
    wall = time.perf_counter() - t0
    if child.returncode not in (0, 1):
        sys.exit(f"{tree}: batchtui {' '.join(argv)} failed ({child.returncode}): {err.strip()}")
    fields = err.split("PEAK")[-1].split()
    cpu = float(fields[2]) + sum(seconds for pid, seconds in workers.items() if pid != child.pid)
    return wall, cpu, int(fields[0]) / 1024, out


POLL_S = 0.1


def session_cpu(sid: int) -> dict[int, float]:
    """CPU seconds so far of each process in session `sid` (from /proc/PID/stat)."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # (after the command's name, which may hold spaces)
        if int(fields[3]) == sid:  # field 6, the session
            found[int(entry.name)] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    return found


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def verdict(ok: bool) -> str:
    return "meets" if ok else "misses"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default=BEFORE, help=f"the revision to compare with (default {BEFORE})")
    parser.add_argument("--skip-million", action="store_true")
    parser.add_argument("--skip-plan", action="store_true")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; {load()}", flush=True)

    wall, cpu, peak, _ = run(HERE, ["sim", "--num-prompts", "100000", *TRAFFIC])
    print(f"100,000 requests at 30 req/s: {cpu:.2f} s CPU ({wall:.2f} s wall), {peak:.0f} MB; "
          f"{verdict(cpu < GOAL_100K_S)} issue 40's {GOAL_100K_S:g} s; {load()}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        other = checkout(args.rev, Path(tmp))
        if not args.skip_million:
            argv = ["sim", "--num-prompts", "1000000", *TRAFFIC]
            this_wall, this_cpu, this_peak, _ = run(HERE, argv)
            rev_wall, rev_cpu, rev_peak, _ = run(other, argv)
            ratio = this_cpu / rev_cpu
            ok = ratio <= GOAL_MILLION_RATIO and this_peak <= GOAL_MILLION_MB
            print(f"1,000,000 requests at 30 req/s: this tree {this_cpu:.1f} s CPU ({this_wall:.1f} s wall), "
                  f"{this_peak:.0f} MB; {args.rev} {rev_cpu:.1f} s CPU ({rev_wall:.1f} s wall), {rev_peak:.0f} MB; "
                  f"ratio {ratio:.2f} (CPU): {verdict(ok)} issue 40's "
                  f"{GOAL_MILLION_RATIO:.2f} at {GOAL_MILLION_MB} MB; {load()}", flush=True)
        if not args.skip_plan:
            argv = [a for a in PLAN if a != "--json"] + ["--jobs", "2"]  # (run adds it)
            this_wall, this_cpu, _, this_out = run(HERE, argv, answer=True)
            rev_wall, rev_cpu, _, rev_out = run(other, argv, answer=True)
            this_out, rev_out = json.loads(this_out), json.loads(rev_out)
            same = this_out["max_rate"] == rev_out["max_rate"]
            runs = [sum(len(t["runs"]) for t in out["confirm_tries"]) for out in (this_out, rev_out)]
            print(f"plan's README example, --jobs 2: this tree {this_wall:.1f} s wall, {this_cpu:.1f} s CPU, "
                  f"{runs[0]} confirmation runs; {args.rev} {rev_wall:.1f} s wall, {rev_cpu:.1f} s CPU, {runs[1]} "
                  f"confirmation runs ({this_cpu / rev_cpu:.2f}x the CPU); "
                  f"{verdict(this_wall <= GOAL_PLAN_S)} issue 40's {GOAL_PLAN_S:g} s (wall); "
                  f"answer {this_out['max_rate']:.4f} req/s, {args.rev}'s {rev_out['max_rate']:.4f} "
                  f"({'the same' if same else 'DIFFERENT'}); {load()}", flush=True)


if __name__ == "__main__":
    main()
