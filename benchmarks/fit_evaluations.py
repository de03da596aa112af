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

    python benchmarks/fit_evaluations.py [--requests 150] [--repeats 1] [--guidellm]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TRUTH = {"eta_bw": 0.72, "eta_mfu": 0.55, "eta_attn": 0.70, "overhead_s": 0.0004, "overhead_per_seq_s": 0.000025}
"""The GPU the measured runs are made with (tests/unit/test_calibrate.py's TRUTH)."""
GUIDELLM = ROOT / "tests" / "data" / "loadgens" / "guidellm-benchmarks.json"
GUIDELLM_TRUTH = {"eta_bw": 0.72, "eta_mfu": 0.55, "overhead_s": 0.0004, "overhead_per_seq_s": 0.000025}


def runs(n: int) -> list[tuple[str, str, int, int, int]]:
    """(name, rate, requests, prompt, output), as the test fixture's `sweep`."""
    return [("low-short", "0.2", 20, 512, 256), ("low-long", "0.05", 10, 16384, 64),
            ("rate-8", "8", n, 512, 256), ("rate-16", "16", n, 512, 256), ("rate-24", "24", n, 512, 256),
            ("rate-inf", "inf", n, 512, 256), ("long-4", "4", n, 3072, 256)]


def truth_profiles(directory: Path) -> Path:
    path = directory / "truth.toml"
    lines = ['[gpus.h100-truth]', 'name = "H100 as measured"', "hbm_bandwidth = 3.35e12", "bf16_peak_flops = 989e12",
             "memory_bytes = 85.0e9", "interconnect_bandwidth = 450e9"]
    lines += [f"{k} = {v!r}" for k, v in TRUTH.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def measure(directory: Path, n: int) -> list[str]:
    from batchtui.cli import main

    truth = truth_profiles(directory)
    paths = []
    for name, rate, count, prompt, output in runs(n):
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


def timed_fit(pts, base, fitted: tuple[str, ...], repeats: int):
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=150, help="requests per loaded run (the fixture's 150)")
    parser.add_argument("--repeats", type=int, default=1, help="fits timed; the best CPU time is shown")
    parser.add_argument("--guidellm", action="store_true", help="also fit the GuideLLM sweep of tests/data")
    args = parser.parse_args(argv)
    from sim.fit import PARAMETER_NAMES

    with tempfile.TemporaryDirectory(prefix="fit-evaluations-") as tmp:
        directory = Path(tmp)
        pts, base = points(measure(directory, args.requests), directory, {})
        result, cpu = timed_fit(pts, base, PARAMETER_NAMES, args.repeats)
        report(f"The test fixture's fit: {len(pts)} runs ({args.requests} requests per loaded run), "
               "every parameter fitted", result, cpu, TRUTH)
        if args.guidellm:
            gpts, gbase = points([str(GUIDELLM)], directory, {"async_scheduling": False})
            fitted = tuple(n for n in PARAMETER_NAMES if n != "eta_attn")
            result, cpu = timed_fit(gpts, gbase, fitted, args.repeats)
            report(f"\nThe GuideLLM sweep's fit: {len(gpts)} runs, eta_attn kept", result, cpu, GUIDELLM_TRUTH)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
