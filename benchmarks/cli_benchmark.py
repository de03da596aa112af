"""Figures for the headless commands, each run as a user runs it (a fresh `batchtui` process):

- a 1,000,000-request `batchtui sim` (512 in / 256 out at 20 req/s): wall time and peak memory
  (the child's maximum resident set size);
- the 16-rate sweep of SIMULATOR.md section 8 (2, 4, ... 48 req/s x 2,000 requests): serial
  (--jobs 1) and parallel (--jobs N), and whether their results are identical;
- `batchtui plan --ttft-p99 200 --tpot-p99 25 --peak-rate 100` (helpdesk lengths): wall time.

Times are also given as ratios to a fixed pure-Python reference loop timed in the same run, since
the machine is shared and absolute times drift. Usage:

    python benchmarks/cli_benchmark.py [--quick] [--jobs N] [--skip-million]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BATCHTUI = [sys.executable, "-m", "batchtui"]
HELPDESK = ["--input-len", "512", "--output-len", "256"]
RATES = "2,4,6,8,10,12,14,16,18,20,24,28,32,36,40,48"


def reference_loop() -> float:
    """The yardstick: 2,000,000 rounds of an integer LCG plus a float add (as sim_benchmark's)."""
    t0 = time.perf_counter()
    x, acc = 1, 0.0
    for _ in range(2_000_000):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        acc += x * 1e-9
    return time.perf_counter() - t0


def saturated(plan: dict) -> str:
    """The plan's saturated rate in words: exact, or (a full queue thrashing the KV cache, not
    searched by plan) the full queue's rate, a lower bound."""
    if plan.get("saturated_rate") is not None:
        return f"saturated {plan['saturated_rate']:.2f}"
    return f"full queue {plan['full_queue_rate']:.2f}, a lower bound of the saturated rate"


def timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall time (s), the child's peak RSS (MiB) and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    done = subprocess.run(BATCHTUI + argv, capture_output=True, text=True, cwd=HERE,
                          env={**os.environ, "PYTHONPATH": str(HERE)})
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        sys.exit(f"batchtui {' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs, for a smoke test")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="processes for the parallel runs")
    parser.add_argument("--skip-million", action="store_true", help="leave out the 1M-request run")
    args = parser.parse_args()
    load = os.getloadavg()
    ref = min(reference_loop() for _ in range(3))
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")
    print(f"reference loop: {ref * 1000:.0f} ms (best of 3)")

    if not args.skip_million:
        n = 100_000 if args.quick else 1_000_000
        wall, rss, _ = timed(["sim", "--num-prompts", str(n), "--request-rate", "20", *HELPDESK])
        print(f"sim, {n:,} requests at 20 req/s: {wall:.1f} s ({wall / ref:.0f}x the reference), "
              f"peak memory {rss:.0f} MiB")

    n = "500" if args.quick else "2000"
    sweep = ["sweep", "--request-rates", RATES, "--num-prompts", n, *HELPDESK, "--json"]
    serial, _, out_serial = timed([*sweep, "--jobs", "1"])
    parallel, _, out_parallel = timed([*sweep, "--jobs", str(args.jobs)])
    same = json.loads(out_serial) == json.loads(out_parallel)
    print(f"sweep, 16 rates x {n} requests: serial {serial:.2f} s ({serial / ref:.1f}x the reference), "
          f"--jobs {args.jobs} {parallel:.2f} s ({serial / parallel:.2f}x faster); identical results: {same}")

    plan = ["plan", "--ttft-p99", "200", "--tpot-p99", "25", "--peak-rate", "100", *HELPDESK, "--json"]
    wall, _, out = timed([*plan, "--jobs", str(args.jobs)])
    d = json.loads(out)
    print(f"plan (3 seeds, confirmation, replicas check), --jobs {args.jobs}: {wall:.1f} s "
          f"({wall / ref:.0f}x the reference); {d['max_rate']:.2f} req/s per replica (seeds "
          f"{', '.join(f'{r:.2f}' for r in d['seed_rates'])}; {saturated(d)}), "
          f"{d['replicas']} replicas")


if __name__ == "__main__":
    main()
