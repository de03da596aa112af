"""`batchtui plan` and `batchtui sweep` (the manual's examples, docs/commands.md) against another revision, timed in
the same run: each command runs as a fresh process, alternating between this tree and the other
revision (default `main`, taken with `git archive` into a temporary folder), so both see the same
load. Prints each run's wall and CPU time, the medians and their ratio, and the answers
(`max_rate`, `saturated_rate`) so a speed-up that changes the answer shows.

    python benchmarks/plan_benchmark.py [--rev main] [--repeats 1] [--jobs 1] [--only plan|sweep]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

# tarfile's "data" filter (refuses links and paths out of the folder) where this Python has it
# (3.11.4 and newer; Debian 12's python3 is 3.11.2); the archive is git archive of this repository.
SAFE_EXTRACT = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}

HERE = Path(__file__).resolve().parent.parent
PLAN = ["plan", "--ttft-p99", "200", "--tpot-p99", "25", "--peak-rate", "100", "--input-len", "512",
        "--output-len", "256", "--json"]
SWEEP = ["sweep", "--request-rates", "4,16,28,32,36,40,48", "--num-prompts", "2000", "--input-len", "512",
         "--output-len", "256", "--json"]


def checkout(rev: str, into: Path) -> Path:
    """`rev` of this repository, extracted (its files only) into `into`."""
    archive = into / "rev.tar"
    subprocess.run(["git", "-C", str(HERE), "archive", "--format=tar", "-o", str(archive), rev], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", **SAFE_EXTRACT)
    return into / "tree"


def timed(tree: Path, argv: list[str]) -> tuple[float, float, dict]:
    """Wall and CPU seconds of `python -m batchtui argv` run from `tree`, and its JSON."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "batchtui", *argv], capture_output=True, text=True, cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"{tree}: batchtui {' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="main", help="the revision to compare with (default main)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="--jobs for both (default 1: CPU time is the figure)")
    parser.add_argument("--only", choices=("plan", "sweep"))
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        other = checkout(args.rev, Path(tmp))
        for name, argv in (("plan", PLAN), ("sweep", SWEEP)):
            if args.only and name != args.only:
                continue
            argv = [*argv, "--jobs", str(args.jobs)]
            got: dict[str, list] = {args.rev: [], "this tree": []}
            for _ in range(args.repeats):
                for label, tree in ((args.rev, other), ("this tree", HERE)):
                    wall, cpu, d = timed(tree, argv)
                    got[label].append((wall, cpu))
                    answer = {k: d.get(k) for k in ("max_rate", "saturated_rate") if k in d}
                    print(f"{name} {label:>9}: wall {wall:6.1f} s, cpu {cpu:6.1f} s  {answer}", flush=True)
            cpu = {label: statistics.median(c for _, c in runs) for label, runs in got.items()}
            print(f"{name}: median CPU {args.rev} {cpu[args.rev]:.1f} s, this tree {cpu['this tree']:.1f} s "
                  f"({cpu['this tree'] / cpu[args.rev]:.2f}x)")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
