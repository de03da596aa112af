"""How many simulator runs `batchtui calibrate`'s fit needs (sim/fit.py).

Builds the measured runs of tests/unit/test_calibrate.py's fixture the way it does (`batchtui sim
--no-async-scheduling --save-result` with a known GPU, TRUTH: one request at a time with short and
with very long prompts, rates 8, 16, 24 and inf with 512-token prompts, a loaded run with
3,072-token prompts; 150 requests per loaded run, `--requests N` to change it), in a temporary
folder, reads them back as `calibrate` does, fits every parameter from the built-in h100-sxm in
this process (no pool) and prints:

- the fit's simulator runs of every point (`evaluations`; each is one run of all the points) and
  its Levenberg-Marquardt iterations,
- the CPU seconds of the fit (this process's, best of `--repeats`),
- each fitted value against the truth, with its standard error,
- the RMS error of the fitted metrics (log ratio simulated/measured) with the base profile and
  fitted.

With `--guidellm` it also fits the GuideLLM sweep of tests/data (tests/unit/test_loadgen_files.py:
eta_attn kept, synchronous scheduling), the third kind of fit the tests run.

With `--more` it also fits runs made the same way with five other GPUs (`OTHER_TRUTHS`) and the
fixture's runs with 2 % of noise put on every measured figure (seeds 3, 5 and 7; seed 3 is
`test_noise_degrades_the_fit_gracefully`'s), one line each: simulator runs, CPU seconds, the RMS
error fitted, each fitted value's error in its standard errors, and the RMS error of the fitted
profile on held-out runs (`HELD_OUT`, made with the same truth). `--baseline REV` fits each case
also with sim/fit.py as it was at git revision REV (read with `git show`, run on today's
simulator), so before and after are measured in one run: `--baseline 30bde2f` is the fit that
measured the Jacobian at every step.

    python benchmarks/fit_evaluations.py [--requests 150] [--repeats 1] [--guidellm] [--more]
                                         [--baseline REV]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TRUTH = {"eta_bw": 0.72, "eta_mfu": 0.55, "eta_attn": 0.70, "overhead_s": 0.0004, "overhead_per_seq_s": 0.000025}
"""The GPU the measured runs are made with (tests/unit/test_calibrate.py's too)."""
GUIDELLM = ROOT / "tests" / "data" / "loadgens" / "guidellm-benchmarks.json"
OTHER_TRUTHS = (
    {"eta_bw": 0.85, "eta_mfu": 0.62, "eta_attn": 0.9, "overhead_s": 0.001, "overhead_per_seq_s": 0.00001},
    {"eta_bw": 0.6, "eta_mfu": 0.45, "eta_attn": 0.6, "overhead_s": 0.0002, "overhead_per_seq_s": 0.00004},
    {"eta_bw": 0.8, "eta_mfu": 0.5, "eta_attn": 0.75, "overhead_s": 0.0006, "overhead_per_seq_s": 0.00002},
    {"eta_bw": 0.65, "eta_mfu": 0.6, "eta_attn": 0.8, "overhead_s": 0.0003, "overhead_per_seq_s": 0.00003},
    {"eta_bw": 0.9, "eta_mfu": 0.7, "eta_attn": 0.65, "overhead_s": 0.0008, "overhead_per_seq_s": 0.000015},
)
"""The first is the thorough test's second GPU."""
NOISE_SEEDS = (3, 5, 7)
HELD_OUT = (("held-12", "12", 150, 512, 256), ("held-20", "20", 150, 512, 256), ("held-long-2", "2", 100, 2048, 128),
            ("held-6", "6", 150, 1024, 256), ("held-inf", "inf", 150, 1024, 128))
"""Runs the fit does not see, for --more: other rates and lengths."""
GUIDELLM_TRUTH = {"eta_bw": 0.72, "eta_mfu": 0.55, "overhead_s": 0.0004, "overhead_per_seq_s": 0.000025}


def runs(n: int) -> list[tuple[str, str, int, int, int]]:
    """(name, rate, requests, prompt, output): the fit's measured runs (tests/unit/test_calibrate.py
    makes them too), `n` requests in each loaded one."""
    return [("low-short", "0.2", 20, 512, 256), ("low-long", "0.05", 10, 16384, 64),
            ("rate-8", "8", n, 512, 256), ("rate-16", "16", n, 512, 256), ("rate-24", "24", n, 512, 256),
            ("rate-inf", "inf", n, 512, 256), ("long-4", "4", n, 3072, 256)]


def truth_profiles(directory: Path, values: dict) -> Path:
    """A profile file with the GPU `h100-truth`: an H100 with the parameters `values`."""
    path = directory / "truth.toml"
    lines = ['[gpus.h100-truth]', 'name = "H100 as measured"', "hbm_bandwidth = 3.35e12", "bf16_peak_flops = 989e12",
             "memory_bytes = 85.0e9", "interconnect_bandwidth = 450e9"]
    lines += [f"{k} = {v!r}" for k, v in values.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def measure(directory: Path, n: int, values: dict = TRUTH, which=None) -> list[str]:
    """Result files of `batchtui sim --save-result` with the GPU `values` (the fixture's runs,
    or `which`)."""
    from batchtui.cli import main

    directory.mkdir(parents=True, exist_ok=True)
    truth = truth_profiles(directory, values)
    paths = []
    for name, rate, count, prompt, output in which or runs(n):
        path = directory / f"{name}.json"
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["sim", "--no-async-scheduling", "--profiles", str(truth), "--gpu", "h100-truth",
                         "--request-rate", rate, "--num-prompts", str(count), "--random-input-len", str(prompt),
                         "--random-output-len", str(output), "--save-result", "--result-filename", str(path),
                         "--json"])
        if code != 0:
            raise SystemExit(f"batchtui sim failed for {name}")
        paths.append(str(path))
    return paths


def points(paths: list[str], directory: Path, given: dict):
    """The runs as `calibrate` reads them (on the built-in h100-sxm and llama-3.1-8b)."""
    from batchtui.cli.measured import load_runs
    from sim.fit import Point
    from sim.scenario import Scenario

    base = Scenario(gpu="h100-sxm", model="llama-3.1-8b")
    loaded = load_runs(paths, base, given, str(directory), base.profiles())
    return [Point(r.label, r.scenario, r.metrics) for r in loaded], base


def noisy(directory: Path, paths: list[str], seed: int) -> list[str]:
    """Copies of the result files with every fitted figure off by a normal 2 % (drawn as the
    noise test draws them)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        for key in ("median_ttft_ms", "median_tpot_ms", "output_throughput"):
            data[key] *= 1 + rng.normal(0, 0.02)
        target = directory / f"noisy{seed}-{Path(path).name}"
        target.write_text(json.dumps(data), encoding="utf-8")
        out.append(str(target))
    return out


def baseline_fit(revision: str):
    """sim/fit.py as it was at `revision`, as a module of today's `sim` package."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:sim/fit.py"], capture_output=True,
                          text=True, check=True).stdout
    spec = importlib.util.spec_from_loader("sim.fit_at_baseline", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "sim"
    sys.modules[spec.name] = module
    exec(compile(text, f"{revision}:sim/fit.py", "exec"), module.__dict__)
    return module.fit


def timed_fit(pts, base, fitted: tuple[str, ...], repeats: int, fit=None):
    if fit is None:
        from sim.fit import fit

    best, result = None, None
    for _ in range(repeats):
        start = time.process_time()
        result = fit(pts, base.profiles(), base.gpu, base.model, fit=fitted)
        cpu = time.process_time() - start
        best = cpu if best is None else min(best, cpu)
    return result, best


def report(title: str, result, cpu: float, truth: dict) -> None:
    from sim.fit import PARAMETERS

    print(title)
    print(f"  evaluations {result.evaluations}   iterations {result.iterations}   CPU {cpu:.2f} s")
    print(f"  RMS error {result.rms_before:.2%} with the base profile, {result.rms_after:.3%} fitted")
    print(f"  {'parameter':<20} {'truth':>12} {'fitted':>12} {'± sigma':>12} {'error':>8}")
    for p in PARAMETERS:
        if p.name not in truth:
            continue
        value = result.values[p.name]
        sigma = result.sigma.get(p.name)
        unit = 1e6 if not p.log else 1.0
        shown = (lambda v: f"{v * unit:.2f} us") if not p.log else (lambda v: f"{v:.4f}")
        kept = "" if p.name in result.fitted else "  (kept)"
        error = value / truth[p.name] - 1
        print(f"  {p.name:<20} {shown(truth[p.name]):>12} {shown(value):>12} "
              f"{shown(sigma) if sigma is not None else '-':>12} {error:>+8.2%}{kept}")


def held_out_error(result, held) -> float:
    """RMS of the log ratios simulated/measured of the held-out runs, with the fitted values."""
    from sim.fit import METRIC_KEYS, simulate_point

    errors = []
    for pt in held:
        simulated = simulate_point((pt.scenario, dict(result.values)))
        errors += [math.log(s / pt.measured[k]) for s, k in zip(simulated, METRIC_KEYS)
                   if pt.measured.get(k) and math.isfinite(s)]
    return math.sqrt(sum(e * e for e in errors) / len(errors))


def one_line(name: str, result, cpu: float, truth: dict, held) -> str:
    errors = " ".join(f"{k}{(result.values[k] - truth[k]) / result.sigma[k]:+.1f}" for k in result.fitted)
    loose = f" (not determined: {', '.join(result.undetermined)})" if result.undetermined else ""
    return (f"  {name:<16} runs {result.evaluations:4d}  CPU {cpu:5.2f} s  rms {result.rms_after:.3%}  "
            f"held-out rms {held_out_error(result, held):.3%}  errors in sigmas: {errors}{loose}")


def more(directory: Path, n: int, repeats: int, fits: dict) -> None:
    from sim.fit import PARAMETER_NAMES

    print("\nMore fits (every parameter; errors of the fitted values in their standard errors):")
    cases = []
    for i, truth in enumerate((TRUTH, *OTHER_TRUTHS)):
        folder = directory / f"truth{i}"
        paths = measure(folder, n, truth)
        held = points(measure(folder / "held", n, truth, HELD_OUT), folder, {})[0]
        cases.append((f"truth {i}", paths, truth, held))
        if i == 0:
            cases += [(f"fixture, noise {seed}", noisy(folder, paths, seed), truth, held) for seed in NOISE_SEEDS]
    totals = {label: [0, 0.0] for label in fits}
    for name, paths, truth, held in cases:
        pts, base = points(paths, directory, {})
        for label, fit in fits.items():
            result, cpu = timed_fit(pts, base, PARAMETER_NAMES, repeats, fit)
            totals[label][0] += result.evaluations
            totals[label][1] += cpu
            print(one_line(f"{name}{label}", result, cpu, truth, held))
    for label, (runs_, cpu) in totals.items():
        print(f"  in all{label}: {runs_} runs, {cpu:.1f} CPU s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=150, help="requests per loaded run (the fixture's 150)")
    parser.add_argument("--repeats", type=int, default=1, help="fits timed; the best CPU time is shown")
    parser.add_argument("--guidellm", action="store_true", help="also fit the GuideLLM sweep of tests/data")
    parser.add_argument("--more", action="store_true", help="also fit other GPUs' runs and noisy copies")
    parser.add_argument("--baseline", metavar="REV", help="also fit with sim/fit.py as at this git revision")
    args = parser.parse_args(argv)
    from sim.fit import PARAMETER_NAMES

    fits = {"": None}
    if args.baseline:
        fits[f" (at {args.baseline})"] = baseline_fit(args.baseline)

    with tempfile.TemporaryDirectory(prefix="fit-evaluations-") as tmp:
        directory = Path(tmp)
        pts, base = points(measure(directory, args.requests), directory, {})
        for label, fit in fits.items():
            result, cpu = timed_fit(pts, base, PARAMETER_NAMES, args.repeats, fit)
            report(f"The test fixture's fit{label}: {len(pts)} runs ({args.requests} requests per loaded run), "
                   "every parameter fitted", result, cpu, TRUTH)
        if args.guidellm:
            gpts, gbase = points([str(GUIDELLM)], directory, {"async_scheduling": False})
            fitted = tuple(n for n in PARAMETER_NAMES if n != "eta_attn")
            for label, fit in fits.items():
                result, cpu = timed_fit(gpts, gbase, fitted, args.repeats, fit)
                report(f"\nThe GuideLLM sweep's fit{label}: {len(gpts)} runs, eta_attn kept", result, cpu,
                       GUIDELLM_TRUTH)
        if args.more:
            more(directory / "more", args.requests, args.repeats, fits)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
