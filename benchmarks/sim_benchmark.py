"""Speed of the headless simulator (SIMULATOR.md section 8, issues 3 and 10).

Prints:

1. iterations simulated per second at a steady batch of 1, 64 and 256 requests: `step()` one
   iteration at a time (what the app's single step uses, a full report each time) and `run()`
   (the lean loop: reports made only when asked, alike decode iterations in bulk);
2. wall time of the 16-rate sweep of section 8 — 2, 4, ..., 20, 24, 28, 32, 36, 40, 48
   requests/s, 2,000 requests each, 512 in / 256 out, Poisson, continuous batching, default
   profile (H100 SXM, Llama 3.1 8B) and `vllm serve` dials — for this engine and, in the same
   run, for the implementation before issue 10 (its `sim` package taken from commit
   `BASELINE_COMMIT` with `git archive`, extracted into a temporary folder and imported as
   `sim_before_issue10`; it is given the very requests this engine draws, as a trace, since the
   workload's draws have changed since: the trace's reading is timed apart and taken off), with the
   ratio of the two (this engine with prefix caching and async scheduling off, as the older one
   has neither; with async scheduling on, the default, as a ratio to off; with caching on as a
   ratio to off: nothing in this traffic is shared); each also as a ratio to a fixed pure-Python reference loop timed in the same
   process, so figures from different machines can be compared. The two must agree (checked:
   iterations, every request's record and every summary figure both report, to the bit but the
   ITL statistics, to a relative 1e-12: see `agree`);
3. peak memory: the process's peak resident set size, and the peak of Python allocations
   (tracemalloc) during one sweep.

The reference loop is 2,000,000 rounds of a linear congruential step on an int plus a float
multiply-add (`k = (k * 1103515245 + 12345) & 0x7FFFFFFF; x += k * 1e-9`): plain CPython
bytecode, no allocation that lasts, no library call. Its time scales with the interpreter and the
core, as the simulator's does.

Run it on one core, as the target is stated: `taskset -c 0 python benchmarks/sim_benchmark.py`
(or `--pin 0`, which sets the affinity from inside). The machine may be shared: timings are the
best of `--repeats` runs (CPU time of this process), the two engines' runs interleaved.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib
import io
import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tracemalloc
from pathlib import Path

# tarfile's "data" filter (refuses links and paths out of the folder) where this Python has it
# (3.11.4 and newer; Debian 12's python3 is 3.11.2); the archive is git archive of this repository.
SAFE_EXTRACT = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.engine import Engine  # noqa: E402
from sim.scenario import Scenario  # noqa: E402
from sim.workload import LengthSpec, WorkloadSpec, generate  # noqa: E402

BASELINE_COMMIT = "382dd67"
"""The engine before issue 10 (the reference engine once kept under tests/ was frozen from it)."""
BASELINE_NAME = "sim_before_issue10"
GOAL_COMMIT = "268552c"
"""The engine issue 40 measures the default sweep against (before the scheduler was folded into
one by issue 10; no async scheduling, prefix caching or API server yet)."""
GOAL_NAME = "sim_at_268552c"
GOAL_RATIO = 0.5
"""Issue 40: the default sweep in at most half the time the 268552c engine takes for it."""

SWEEP_RATES = (2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 24, 28, 32, 36, 40, 48)
SWEEP_PROMPTS = 2000
REFERENCE_ROUNDS = 2_000_000
SWEEP_TARGET_S = 2.0


def reference_loop(rounds: int = REFERENCE_ROUNDS) -> float:
    """The fixed pure-Python workload the sweep time is divided by (see the module docstring)."""
    k = 1
    x = 0.0
    for _ in range(rounds):
        k = (k * 1103515245 + 12345) & 0x7FFFFFFF
        x += k * 1e-9
    return x


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def sweep_scenario() -> Scenario:
    return Scenario(workload=WorkloadSpec(arrival="poisson", request_rate=SWEEP_RATES[0],
                                          num_prompts=SWEEP_PROMPTS,
                                          input=LengthSpec("fixed", 512), output=LengthSpec("fixed", 256)),
                    seed=0)


def load_baseline(commit: str = BASELINE_COMMIT, name: str = BASELINE_NAME):
    """The `sim` package of `commit`, extracted with `git archive` into a temporary folder and
    imported as `name` (its own absolute imports renamed to match)."""
    repo = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "sim"], capture_output=True,
                             check=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="batchtui-baseline-"))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, **SAFE_EXTRACT)
    (folder / "sim").rename(folder / name)
    for path in (folder / name).rglob("*.py"):
        text = path.read_text()
        text = re.sub(r"\b(from|import) sim\b", rf"\1 {name}", text)
        path.write_text(text.replace('files("sim")', f'files("{name}")'))
    sys.path.insert(0, str(folder))
    return importlib.import_module(name), folder


def write_traces(folder: Path) -> list[str]:
    """Each rate's requests as this engine draws them, as a JSON Lines trace (floats exact)."""
    import numpy as np

    paths = []
    for rate in SWEEP_RATES:
        sc = sweep_scenario().with_workload(request_rate=float(rate))
        path = folder / f"rate-{rate}.jsonl"
        with open(path, "w") as fh:
            for s in generate(sc.workload, np.random.default_rng(sc.seed)):
                fh.write(json.dumps({"request_id": s.request_id, "arrival_time": s.arrival_time,
                                     "prompt_len": s.prompt_len, "output_len": s.output_len}) + "\n")
        paths.append(str(path))
    return paths


def run_sweep(engine_class=Engine, profiles=None, caching: bool | None = None,
              asynchronous: bool | None = None, api_servers: int | None = None) -> list:
    """The sweep; `caching` sets this engine's prefix caching (None: the default, on),
    `asynchronous` its async scheduling (None: the default, on) and `api_servers` the API servers
    in front of it (None: the default, one; 0: none)."""
    base = sweep_scenario()
    if caching is not None:
        base = base.with_engine(enable_prefix_caching=caching)
    if asynchronous is not None:
        base = base.with_engine(async_scheduling=asynchronous)
    if api_servers is not None:
        base = base.with_engine(api_server_count=api_servers)
    return [engine_class(base.with_workload(request_rate=float(rate)), profiles=profiles).run()
            for rate in SWEEP_RATES]


def baseline_sweep(baseline, traces: list[str]):
    """The baseline engine over the traces (the same requests as `run_sweep`'s)."""
    for part in ("scenario", "workload", "engine"):
        importlib.import_module(f"{baseline.__name__}.{part}")

    def run(engine_class=None, profiles=None, caching=None) -> list:
        out = []
        for path in traces:
            sc = baseline.scenario.Scenario(workload=baseline.workload.WorkloadSpec(arrival="trace",
                                                                                    trace_path=path), seed=0)
            out.append(baseline.engine.Engine(sc).run())
        return out

    def read_traces() -> None:
        for path in traces:
            baseline.workload.load_trace(path)

    return run, read_traces


def agree(new, old) -> bool:
    """The two engines' runs of one rate come out the same: iterations, every request's record
    field for field (the fields both have), and every summary figure both report (the newer one
    reports more). The ITL
    statistics are recomputed since issue 10 from the same gaps in another order (chunked dot
    products, a weighted selection), equal to a relative 1e-12 rather than to the bit; every
    other figure must be equal to the bit."""
    if new.iterations != old.iterations or len(new.records) != len(old.records):
        return False
    for a, b in zip(new.records, old.records):
        b_fields = dataclasses.asdict(b)
        if any(getattr(a, key) != value for key, value in b_fields.items()):
            return False  # the newer record also has fields the older lacks (num_cached_tokens)
    for key in set(new.metrics) & set(old.metrics):
        a, b = new.metrics[key], old.metrics[key]
        if key.endswith("_itl_ms") and isinstance(a, float) and isinstance(b, float):
            if not math.isclose(a, b, rel_tol=1e-12):
                return False
        elif a != b:
            return False
    return True


def batch_scenario(batch: int) -> Scenario:
    """A steady batch: `batch` seats, eight times as many requests queued at once, outputs
    uniform in 128..384 so seats free up (and refill from the queue) one at a time."""
    return Scenario(engine={"max_num_seqs": batch, "max_num_batched_tokens": max(8192, batch)},
                    workload=WorkloadSpec(request_rate=math.inf, num_prompts=8 * batch + 8,
                                          input=LengthSpec("fixed", 512),
                                          output=LengthSpec("uniform", 256, 128, 384)),
                    seed=0)


def iterations_per_second(batch: int, mode: str, profiles, budget_s: float = 1.0) -> tuple[float, float]:
    """(iterations per wall second, time-weighted mean running batch) for one mode."""
    engine = Engine(batch_scenario(batch), profiles=profiles)
    gc.collect()
    t0 = time.perf_counter()
    deadline = t0 + budget_s
    if mode == "step":
        while time.perf_counter() < deadline:
            for _ in range(64):
                if engine.step() is None:
                    break
            if engine.done:
                break
    else:
        chunk = 64
        while time.perf_counter() < deadline and not engine.done:
            engine.advance_until(math.inf, max_iterations=chunk)
            chunk = min(chunk * 2, 1 << 20)
    elapsed = time.perf_counter() - t0
    m = engine.metrics
    mean_running = m.running_integral / m.busy_time if m.busy_time else 0.0
    return engine.iteration / elapsed, mean_running


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pin", type=int, metavar="CPU", help="run on this CPU only (sched_setaffinity)")
    ap.add_argument("--repeats", type=int, default=5, help="sweep timings to take the best of (default 5)")
    ap.add_argument("--goal", action="store_true",
                    help=f"time only issue 40's pair: the default sweep and the {GOAL_COMMIT} engine's")
    args = ap.parse_args(argv)
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    profiles = sweep_scenario().profiles()

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, running on CPUs {cpus}")
    ref = best_of(reference_loop, 5)
    print(f"reference loop ({REFERENCE_ROUNDS:,} rounds): {ref * 1000:.1f} ms (best of 5)")
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print()
    if args.goal:
        return goal(profiles, args.repeats, ref)

    print("iterations simulated per second (steady batch; mean running in brackets)")
    print(f"{'batch':>6} {'step()':>18} {'run()':>20}")
    for batch in (1, 64, 256):
        cells = []
        for mode in ("step", "run"):
            ips, running = iterations_per_second(batch, mode, profiles)
            cells.append(f"{ips:>10,.0f} [{running:5.1f}]")
        print(f"{batch:>6} {cells[0]:>18} {cells[1]:>20}")
    print()

    # "this" is the engine as it runs by default (prefix caching and async scheduling on, nothing
    # shared in this traffic, the API server in front); "no front" the same without the API server;
    # "sync" the default with async scheduling off; "off" with caching and the API server off too,
    # the one compared with the engine before issue 10, which predates all three (with caching on,
    # requests resumed after a preemption may hit their own blocks, so results may differ where the
    # sweep preempts; async scheduling and the API server change every timing).
    baseline, folder = load_baseline()
    previous_sweep, read_traces = baseline_sweep(baseline, write_traces(folder))
    reading = best_of(read_traces, 5)  # what the baseline spends reading its traces, taken off
    def sync_sweep(engine_class, profiles, caching):
        return run_sweep(engine_class, profiles, caching, asynchronous=False,
                         api_servers=0 if caching is False else None)

    def frontless_sweep(engine_class, profiles, caching):
        return run_sweep(engine_class, profiles, caching, api_servers=0)

    at_goal, goal_folder = load_baseline(GOAL_COMMIT, GOAL_NAME)
    goal_sweep, read_goal_traces = baseline_sweep(at_goal, write_traces(goal_folder))
    goal_reading = best_of(read_goal_traces, 5)
    variants = (("this", run_sweep, None), ("no front", frontless_sweep, None), ("sync", sync_sweep, None),
                ("off", sync_sweep, False), ("previous", previous_sweep, None), (GOAL_COMMIT, goal_sweep, None))
    readings = {"previous": reading, GOAL_COMMIT: goal_reading}
    for _, sweep, caching in variants:  # warm up (imports, caches)
        sweep(Engine, profiles, caching)
    times = {name: [] for name, _, _ in variants}
    results_of = {}
    for _ in range(max(1, args.repeats)):
        for name, sweep, caching in variants:
            gc.collect()
            t0 = time.process_time()
            results_of[name] = sweep(Engine, profiles, caching)
            times[name].append(time.process_time() - t0 - readings.get(name, 0.0))
    mine, previous = results_of["this"], results_of["previous"]
    same = all(agree(a, b) for a, b in zip(results_of["off"], previous))
    best, best_previous = min(times["this"]), min(times["previous"])
    best_off = min(times["off"])
    iterations = sum(r.iterations for r in mine)
    verdict = "meets" if best < SWEEP_TARGET_S else "misses"
    print(f"sweep, 16 rates x {SWEEP_PROMPTS:,} requests (512 in / 256 out, Poisson, continuous, "
          f"h100-sxm + llama-3.1-8b, vllm serve dials), {iterations:,} iterations, CPU time best of "
          f"{len(times['this'])}:")
    print(f"  this engine:     {best:.3f} s (median {statistics.median(times['this']):.3f} s) -> "
          f"{best / ref:.1f}x the reference loop; {verdict} the {SWEEP_TARGET_S:.0f} s target")
    best_front = min(times["no front"])
    print(f"  no API server:   {best_front:.3f} s (median {statistics.median(times['no front']):.3f} s): "
          f"the API server costs {best / best_front:.3f}x (best), "
          f"{statistics.median(times['this']) / statistics.median(times['no front']):.3f}x (median)")
    best_sync = min(times["sync"])
    print(f"  async off:       {best_sync:.3f} s (median {statistics.median(times['sync']):.3f} s): "
          f"async scheduling costs {best / best_sync:.3f}x (best), "
          f"{statistics.median(times['this']) / statistics.median(times['sync']):.3f}x (median)")
    print(f"  caching and API server off too: {best_off:.3f} s (median {statistics.median(times['off']):.3f} s): "
          f"prefix caching and the API server cost {best_sync / best_off:.3f}x (best), "
          f"{statistics.median(times['sync']) / statistics.median(times['off']):.3f}x (median)")
    print(f"  before issue 10 (commit {BASELINE_COMMIT}, its trace reading of {reading * 1000:.0f} ms taken off): "
          f"{best_previous:.3f} s (median {statistics.median(times['previous']):.3f} s) -> "
          f"{best_previous / ref:.1f}x the reference loop")
    print(f"  caching off / before = {best_off / best_previous:.2f} (best), "
          f"{statistics.median(times['off']) / statistics.median(times['previous']):.2f} (median); "
          f"results identical: {same}")
    print_goal(times["this"], times[GOAL_COMMIT], goal_reading)
    print("  rate  iterations  mean running  p99 TTFT ms  output tok/s")
    for rate, r in zip(SWEEP_RATES, mine):
        m = r.metrics
        print(f"  {rate:>4} {r.iterations:>11,} {m['mean_running']:>13.1f} {m['p99_ttft_ms']:>12.1f} "
              f"{m['output_throughput']:>13,.0f}")
    print()

    gc.collect()
    tracemalloc.start()
    run_sweep(Engine, profiles)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    maxrss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"peak memory: {maxrss_kib / 1024:.1f} MiB resident (whole process, ru_maxrss); "
          f"{peak / 2**20:.1f} MiB of Python allocations during one sweep (tracemalloc)")
    return 0 if same else 1


def print_goal(this: list[float], at_goal: list[float], reading: float) -> float:
    """Issue 40's ratio: the default sweep's CPU time over the 268552c engine's, best and median."""
    ratio = min(this) / min(at_goal)
    verdict = "meets" if ratio <= GOAL_RATIO else "misses"
    print(f"  the {GOAL_COMMIT} engine (its trace reading of {reading * 1000:.0f} ms taken off): "
          f"{min(at_goal):.3f} s (median {statistics.median(at_goal):.3f} s)")
    print(f"  default sweep / {GOAL_COMMIT} = {ratio:.2f} (best), "
          f"{statistics.median(this) / statistics.median(at_goal):.2f} (median); {verdict} issue 40's "
          f"{GOAL_RATIO}; load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return ratio


def goal(profiles, repeats: int, ref: float) -> int:
    """Only issue 40's pair, interleaved: the default sweep and the 268552c engine's."""
    at_goal, folder = load_baseline(GOAL_COMMIT, GOAL_NAME)
    sweep_at_goal, read_traces = baseline_sweep(at_goal, write_traces(folder))
    reading = best_of(read_traces, 5)
    run_sweep(Engine, profiles)
    sweep_at_goal()
    this, before = [], []
    for _ in range(max(1, repeats)):
        for times, sweep in ((this, lambda: run_sweep(Engine, profiles)), (before, sweep_at_goal)):
            gc.collect()
            t0 = time.process_time()
            sweep()
            times.append(time.process_time() - t0)
        before[-1] -= reading
    print(f"sweep, 16 rates x {SWEEP_PROMPTS:,} requests, CPU time best of {len(this)}, interleaved:")
    print(f"  this engine (defaults: async scheduling, prefix caching, the API server): {min(this):.3f} s "
          f"(median {statistics.median(this):.3f} s) -> {min(this) / ref:.1f}x the reference loop")
    print_goal(this, before, reading)
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
