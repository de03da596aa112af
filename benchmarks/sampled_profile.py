"""A sampled profile of the simulator (issue 40): py-spy samples a child running the work at 500 Hz
and the samples are summed by function, as self time (the function on top of the stack) and as
inclusive time (anywhere on it), and self time by module.

    python benchmarks/sampled_profile.py sweep        # sim_benchmark's default sweep, 5 times
    python benchmarks/sampled_profile.py run 32       # 20,000 requests at 32 req/s (a plan confirmation run), 4 times

py-spy is not a dependency of batchtui: `pip install py-spy` first.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def work(kind: str, rate: float, repeats: int) -> None:
    """The profiled work, in this process."""
    sys.path.insert(0, str(HERE.parent))
    import sim_benchmark

    from sim.engine import Engine

    scenario = sim_benchmark.sweep_scenario().with_workload(request_rate=rate, num_prompts=20_000)
    t0 = time.process_time()
    for _ in range(repeats):
        if kind == "sweep":
            sim_benchmark.run_sweep()
        else:
            Engine(scenario, keep_records=True).run()
    print(f"CPU {time.process_time() - t0:.2f} s for {repeats}", file=sys.stderr)


def frame_name(frame: str) -> tuple[str, str]:
    """(function, module) of a py-spy raw frame, `name (path:line)`."""
    m = re.match(r"(.*) \((.*?)(?::\d+)?\)$", frame)
    if not m:
        return frame, frame
    path = m.group(2)
    for root in (str(HERE.parent) + "/", "site-packages/"):
        if root in path:
            path = path.split(root, 1)[1]
    return f"{m.group(1)} ({path})", path


def summarise(raw: Path, top: int) -> None:
    own: collections.Counter = collections.Counter()
    anywhere: collections.Counter = collections.Counter()
    modules: collections.Counter = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        total += n
        frames = [frame_name(f) for f in stack.split(";")]
        own[frames[-1][0]] += n
        modules[frames[-1][1]] += n
        for name in {f for f, _ in frames}:
            anywhere[name] += n
    print(f"{total} samples")
    for title, counts in (("self time by module", modules), ("self time by function", own),
                          ("inclusive time by function", anywhere)):
        print(f"-- {title}")
        for name, n in counts.most_common(top):
            print(f"{100 * n / total:5.1f}%  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("sweep", "run"))
    parser.add_argument("rate", nargs="?", type=float, default=32.0, help="run: requests/s (default 32)")
    parser.add_argument("--repeats", type=int, default=0, help="default: 5 sweeps, 4 runs")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--work", action="store_true", help=argparse.SUPPRESS)  # (the sampled child)
    args = parser.parse_args()
    repeats = args.repeats or (5 if args.kind == "sweep" else 4)
    if args.work:
        work(args.kind, args.rate, repeats)
        return 0
    spy = shutil.which("py-spy") or (str(Path(sys.executable).with_name("py-spy"))
                                     if Path(sys.executable).with_name("py-spy").exists() else None)
    if spy is None:
        print("py-spy is not installed: pip install py-spy", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "profile.raw"
        subprocess.run([spy, "record", "-r", "500", "-f", "raw", "-o", str(raw), "--", sys.executable, __file__,
                        args.kind, str(args.rate), "--repeats", str(repeats), "--work"],
                       check=True, stdout=subprocess.DEVNULL)
        summarise(raw, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
