"""What compiling the engine would buy (issue 40's "compiled core" route), measured: the engine's
hot modules, their source unchanged, compiled with mypyc (by their type annotations) or Cython
into a temporary copy of `sim`, and the default sweep of `sim_benchmark.py` (16 rates x 2,000
requests, async scheduling, prefix caching, the API server) timed with the compiled copy and with
the pure-Python package, interleaved, in one process; with `--goal`, the 268552c engine too, for
issue 40's ratio; with `--requests N`, one run of N requests at 30 req/s too (speed_goals.py's
100,000-request traffic, timed in this process). Every result must be identical (iterations,
every summary figure and every request record, to the bit).

Neither compiler is a dependency of batchtui: `pip install mypy setuptools` (or `cython
setuptools`) first, and a C compiler. The build's CPU time is printed: what a compiled core would
add to an install.

    python benchmarks/compiled_sweep.py [--compiler mypyc|cython] [--repeats 3] [--goal] [--requests 100000]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

# The pure modules for the interpreted side, though a compiled core is installed (sim.native).
os.environ["BATCHTUI_PURE"] = "1"
import sim_benchmark  # noqa: E402
from sim import native  # noqa: E402

del os.environ["BATCHTUI_PURE"]

NAME = "sim_compiled"
MODULES = ("engine", "cost", "metrics", "frontend", "kv", "request", "arrivals",
           "schedulers/continuous", "schedulers/running", "schedulers/base", "schedulers/queues")
"""The modules compiled: those the sampled profile finds the sweep's time in."""

MYPYC_MODULES = tuple(m.replace(".", "/") for m in native.MODULES)
"""The modules mypyc compiles: those setup.py compiles (`sim.native.MODULES`)."""

MYPYC_BUILD = """
import sys
from setuptools import setup
from mypyc.build import mypycify
name, options = sys.argv[1], sys.argv[2].split()
modules = sys.argv[3:]
setup(ext_modules=mypycify([*options, *(name + "/" + m + ".py" for m in modules)], opt_level="3"),
      script_args=["build_ext", "--inplace", "--quiet"])
"""

BUILD = """
import sys
from setuptools import Extension, setup
from Cython.Build import cythonize
name, modules = sys.argv[1], sys.argv[2:]
extensions = [Extension(name + "." + m.replace("/", "."), [name + "/" + m + ".py"]) for m in modules]
# (annotation_typing off: the annotations document, they do not convert or check)
setup(ext_modules=cythonize(extensions, quiet=True,
                            compiler_directives={"language_level": 3, "annotation_typing": False}),
      script_args=["build_ext", "--inplace", "--quiet"])
"""


def build(folder: Path, compiler: str = "cython") -> tuple[object, float]:
    """The tree's `sim` copied into `folder` as NAME (its absolute imports renamed), MODULES
    (MYPYC_MODULES) compiled in place; returns the package and the build's CPU seconds."""
    script, modules = (MYPYC_BUILD, MYPYC_MODULES) if compiler == "mypyc" else (BUILD, MODULES)
    target = folder / NAME
    shutil.copytree(HERE.parent / "sim", target, ignore=shutil.ignore_patterns("__pycache__", "*.so", native.STAMP))
    for path in target.rglob("*.py"):
        text = path.read_text()
        text = re.sub(r"\b(from|import) sim\b", rf"\1 {NAME}", text)
        path.write_text(text.replace('files("sim")', f'files("{NAME}")'))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    options = [" ".join(native.MYPY_OPTIONS)] if compiler == "mypyc" else []
    done = subprocess.run([sys.executable, "-c", script, NAME, *options, *modules], cwd=folder, capture_output=True,
                          text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"compiling failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    stamp(folder)
    sys.path.insert(0, str(folder))
    package = importlib.import_module(NAME)
    for module in modules:
        loaded = importlib.import_module(f"{NAME}.{module.replace('/', '.')}")
        if not loaded.__file__.endswith(".so"):
            sys.exit(f"{loaded.__name__} was not compiled ({loaded.__file__})")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return package, cpu


def stamp(folder: Path) -> None:
    """The copy's sources' hashes, as setup.py writes them: its `native` uses the compiled modules."""
    root = folder / NAME
    (root / native.STAMP).write_text(json.dumps(native.source_hashes(root)))


def compiled_sweep(package):
    """sim_benchmark's default sweep, run by the compiled copy (its own scenario classes)."""
    scenario = importlib.import_module(f"{NAME}.scenario")
    workload = importlib.import_module(f"{NAME}.workload")
    engine = importlib.import_module(f"{NAME}.engine")
    base = scenario.Scenario(workload=workload.WorkloadSpec(
        arrival="poisson", request_rate=sim_benchmark.SWEEP_RATES[0], num_prompts=sim_benchmark.SWEEP_PROMPTS,
        input=workload.LengthSpec("fixed", 512), output=workload.LengthSpec("fixed", 256)), seed=0)

    def run() -> list:
        return [engine.Engine(base.with_workload(request_rate=float(rate))).run() for rate in sim_benchmark.SWEEP_RATES]
    return run


def single_run(name: str, requests: int):
    """One run of `requests` requests at 30 req/s, 512 in / 256 out, the defaults (speed_goals.py's
    traffic), by the package `name` ("sim", or NAME once built)."""
    scenario = importlib.import_module(f"{name}.scenario")
    workload = importlib.import_module(f"{name}.workload")
    engine = importlib.import_module(f"{name}.engine")
    sc = scenario.Scenario(workload=workload.WorkloadSpec(
        arrival="poisson", request_rate=30.0, num_prompts=requests,
        input=workload.LengthSpec("fixed", 512), output=workload.LengthSpec("fixed", 256)), seed=0)

    def run() -> list:
        return [engine.Engine(sc).run()]
    return run


def timed(runs: dict, repeats: int, reading: float = 0.0, reader: str = "") -> dict[str, list[float]]:
    """CPU seconds of each of `runs`, interleaved, `repeats` times (`reading` taken off `reader`'s)."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(max(1, repeats)):
        for name, run in runs.items():
            gc.collect()
            t0 = time.process_time()
            run()
            times[name].append(time.process_time() - t0 - (reading if name == reader else 0.0))
    return times


def fingerprint(summary) -> tuple:
    """Everything a run reports, as plain values (the two packages' record classes differ)."""
    return (summary.iterations, sorted(summary.metrics.items(), key=str),
            [dataclasses.astuple(r) for r in summary.records])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="sweep timings to take the best of (default 3)")
    ap.add_argument("--goal", action="store_true", help=f"time the {sim_benchmark.GOAL_COMMIT} engine too")
    ap.add_argument("--compiler", choices=("mypyc", "cython"), default="mypyc", help="the compiler (default mypyc)")
    ap.add_argument("--requests", type=int, default=0,
                    help="also time one run of this many requests at 30 req/s (speed_goals.py's 100,000)")
    args = ap.parse_args()
    try:
        if args.compiler == "mypyc":
            import mypy.version
            version = f"mypyc {mypy.version.__version__}"
        else:
            import Cython
            version = f"Cython {Cython.__version__}"
    except ImportError:
        sys.exit(f"this benchmark needs {args.compiler} (and setuptools, and a C compiler): "
                 f"pip install {'mypy' if args.compiler == 'mypyc' else 'cython'} setuptools")
    with tempfile.TemporaryDirectory(prefix="batchtui-compiled-") as tmp:
        package, build_cpu = build(Path(tmp), args.compiler)
        count = len(MYPYC_MODULES if args.compiler == "mypyc" else MODULES)
        print(f"compiled {count} modules of sim with {version}: {build_cpu:.0f} s of CPU; "
              f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        sweeps = {"pure": sim_benchmark.run_sweep, "compiled": compiled_sweep(package)}
        reading = 0.0
        if args.goal:
            at_goal, folder = sim_benchmark.load_baseline(sim_benchmark.GOAL_COMMIT, sim_benchmark.GOAL_NAME)
            goal_sweep, read_traces = sim_benchmark.baseline_sweep(at_goal, sim_benchmark.write_traces(folder))
            reading = sim_benchmark.best_of(read_traces, 5)
            sweeps[sim_benchmark.GOAL_COMMIT] = goal_sweep
        results = {name: sweep() for name, sweep in sweeps.items()}  # (warm-up)
        same = all(fingerprint(a) == fingerprint(b) for a, b in zip(results["pure"], results["compiled"]))
        times = timed(sweeps, args.repeats, reading, sim_benchmark.GOAL_COMMIT)
        if args.requests:
            big = {"pure": single_run("sim", args.requests), "compiled": single_run(NAME, args.requests)}
            big_times = timed(big, 1)
            big_same = fingerprint(big["pure"]()[0]) == fingerprint(big["compiled"]()[0])
            same = same and big_same
    best = {name: min(t) for name, t in times.items()}
    median = {name: statistics.median(t) for name, t in times.items()}
    print(f"default sweep, CPU time best of {len(times['pure'])} (median), interleaved:")
    for name in sweeps:
        print(f"  {name}: {best[name]:.3f} s ({median[name]:.3f} s)")
    print(f"  compiled / pure = {best['compiled'] / best['pure']:.2f} ({median['compiled'] / median['pure']:.2f}); "
          f"results {'identical' if same else 'DIFFERENT'}")
    if args.goal:
        goal = sim_benchmark.GOAL_COMMIT
        print(f"  compiled / {goal} = {best['compiled'] / best[goal]:.2f} ({median['compiled'] / median[goal]:.2f}), "
              f"pure / {goal} = {best['pure'] / best[goal]:.2f}; issue 40 asks {sim_benchmark.GOAL_RATIO}")
    if args.requests:
        print(f"{args.requests:,} requests at 30 req/s, CPU time (in this process): pure {big_times['pure'][0]:.2f} s, "
              f"compiled {big_times['compiled'][0]:.2f} s ({big_times['compiled'][0] / big_times['pure'][0]:.2f}); "
              f"results {'identical' if big_same else 'DIFFERENT'}")
    print(f"load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
