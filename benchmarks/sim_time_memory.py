"""Memory against simulated time (issue 22): `batchtui sim` runs whose simulated duration grows a
thousandfold while the work (requests, iterations) stays the same, each in a fresh process; the
child's peak resident memory (maximum RSS) and wall time are printed. Memory and time should follow
the work, not the simulated seconds: before the fix, `--think-time 1e8 --turns 2 --num-prompts 1`
took 2.38 GB and 38 s. Usage:

    python benchmarks/sim_time_memory.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
# The command line in a fresh process that reports its own peak resident memory (KB) and CPU
# seconds last.
# (main() reads sys.argv as the `batchtui` command does, and so settles the collector as it does.)
CHILD = ("import resource, sys\n"
         "from batchtui.cli import main\n"
         "code = main()\n"
         "use = resource.getrusage(resource.RUSAGE_SELF)\n"
         "print('PEAK', use.ru_maxrss, 'CPU', use.ru_utime + use.ru_stime, file=sys.stderr)\n"
         "sys.exit(code)\n")
BATCHTUI = [sys.executable, "-c", CHILD, "sim", "--json"]
RUNS = [
    ("two turns, 1e2 s apart", ["--think-time", "1e2", "--turns", "2", "--num-prompts", "1"]),
    ("two turns, 1e5 s apart", ["--think-time", "1e5", "--turns", "2", "--num-prompts", "1"]),
    ("two turns, 1e8 s apart", ["--think-time", "1e8", "--turns", "2", "--num-prompts", "1"]),
    ("5 requests at 1e-1 req/s", ["--request-rate", "1e-1", "--num-prompts", "5"]),
    ("5 requests at 1e-7 req/s", ["--request-rate", "1e-7", "--num-prompts", "5"]),
]


def measure(argv: list[str]) -> tuple[float, float, float]:
    """(peak RSS in MB, wall seconds, simulated seconds) of one fresh `batchtui sim` process."""
    env = dict(os.environ, BATCHTUI_NO_PROGRESS="1", PYTHONPATH=str(HERE))
    t0 = time.perf_counter()
    child = subprocess.Popen(BATCHTUI + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=HERE)
    out, err = child.communicate()
    wall = time.perf_counter() - t0
    if child.returncode != 0:
        raise SystemExit(f"batchtui sim {' '.join(argv)} failed: {err.decode().strip()}")
    peak_kb = int(err.decode().split("PEAK")[-1].split()[0])
    return peak_kb / 1024, wall, json.loads(out)["duration"]


def main() -> int:
    print(f"{'run':<28} {'simulated s':>14} {'peak MB':>9} {'wall s':>8}")
    for name, argv in RUNS:
        peak, wall, duration = measure(argv)
        print(f"{name:<28} {duration:>14.4g} {peak:>9.0f} {wall:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
