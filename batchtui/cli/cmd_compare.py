"""`batchtui compare`: every measured run simulated on its own settings, side by side.

Each result file is replayed (`measured`) on the chosen GPU profile (a calibrated one with
`--profiles FILE --gpu NAME`); the output is `vllm bench serve`'s figures for each run with a
simulated column and the error, then the sweep chart (output throughput against TTFT p99) with
the measured and the simulated points, so where the model holds and where it does not shows at
a glance.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile

from . import results
from .asciichart import scatter
from .runner import default_jobs

from . import args as a
from . import options as o
from .cmd_calibrate import add_hardware_args, base_scenario
from .exits import EXIT_OK
from .output import Sink
from .setup import user_errors
from .workers import Workers

HELP = "simulate measured runs (vllm bench serve, GuideLLM, aiperf) and show measured and simulated side by side"

# (key, label, format) of the rows each run shows, when its file has them.
ROWS = (
    ("request_throughput", "Request throughput (req/s)", "{:,.2f}"),
    ("output_throughput", "Output token throughput (tok/s)", "{:,.1f}"),
    ("mean_ttft_ms", "Mean TTFT (ms)", "{:,.2f}"),
    ("median_ttft_ms", "Median TTFT (ms)", "{:,.2f}"),
    ("p99_ttft_ms", "P99 TTFT (ms)", "{:,.2f}"),
    ("mean_tpot_ms", "Mean TPOT (ms)", "{:,.2f}"),
    ("median_tpot_ms", "Median TPOT (ms)", "{:,.2f}"),
    ("p99_tpot_ms", "P99 TPOT (ms)", "{:,.2f}"),
    ("mean_itl_ms", "Mean ITL (ms)", "{:,.2f}"),
    ("median_itl_ms", "Median ITL (ms)", "{:,.2f}"),
    ("p99_itl_ms", "P99 ITL (ms)", "{:,.2f}"),
    ("mean_e2el_ms", "Mean E2EL (ms)", "{:,.2f}"),
    ("median_e2el_ms", "Median E2EL (ms)", "{:,.2f}"),
    # vllm bench serve's speculative decoding figures, when the run drafted
    ("spec_decode_acceptance_rate", "Draft acceptance rate (%)", "{:,.2f}"),
    ("spec_decode_acceptance_length", "Acceptance length", "{:,.2f}"),
)
MEASURED, SIMULATED, BOTH = "o", "x", "@"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Run the simulator on each measured run's settings (traffic from the result file, engine from the "
        "flags or the file's --metadata) and print measured against simulated: vllm bench serve's "
        "figures with a simulated column, and the sweep chart with both curves.")
    p.add_argument("results", nargs="+", metavar="RESULT.json", help="result files of vllm bench serve --save-result, GuideLLM reports (benchmarks.json: one run "
                        "per benchmark) or aiperf exports (profile_export_aiperf.json), told apart by content")
    add_hardware_args(p, gpu_required=False,
                      gpu_help="the GPU profile to simulate (default h100-sxm; a calibrated one with "
                               + o.flagged("--profiles FILE {gpu} NAME; auto: the GPU nvidia-smi reports)"))
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print every run's measured and simulated figures as JSON")
    a.add_jobs_arg(p)
    p.set_defaults(func=run)


def simulate(job) -> dict:
    """One run's simulated metrics (a pool worker's job)."""
    from sim.engine import run_scenario

    return run_scenario(job, keep_requests=False).metrics


@user_errors
def run(args: argparse.Namespace) -> int:
    from .measured import first_run, load_runs

    base, profiles = base_scenario(args, first_run(args.results[0]))
    # Each file may name its own GPU (--metadata gpu=...) and model (its model_id), unless the
    # command line sets them for all.
    from_file = tuple(k for k, flag in (("gpu", args.gpu), ("model", args.model)) if not flag)
    with tempfile.TemporaryDirectory(prefix="batchtui-compare-") as trace_dir:
        runs = load_runs(args.results, base, o.given_dials(args), trace_dir, profiles, from_file)
        with Workers(min(args.jobs or default_jobs(), len(runs))) as workers:
            simulated = workers.map(simulate, [r.scenario for r in runs])
    order = sorted(range(len(runs)), key=lambda i: (runs[i].rate, runs[i].label))
    runs = [runs[i] for i in order]
    simulated = [simulated[i] for i in order]
    gpu, model = profiles.gpu(base.gpu), profiles.model(base.model)
    if args.json:
        results.dump_json(Sink(sys.stdout, "standard output"), {
            "gpu": gpu.id, "model": model.id,
            "runs": [{"file": r.path, "run": r.label, "request_rate": r.rate,
                      "gpu": r.scenario.gpu, "model": r.scenario.model,
                      "measured": {k: r.metrics[k] for k, _, _ in ROWS if k in r.metrics},
                      "simulated": {k: s.get(k) for k, _, _ in ROWS if k in r.metrics}}
                     for r, s in zip(runs, simulated)]})
        return EXIT_OK
    mixed = any((r.scenario.gpu, r.scenario.model) != (base.gpu, base.model) for r in runs)
    if mixed:
        print(o.flagged("Measured runs, each simulated on the GPU and model its file names ({gpu}, {model}: one for "
                        "all)."))
    else:
        print(f"Measured runs against {model.name} simulated on {gpu.name} ({gpu.id}).")
    errors = []
    for r, s in zip(runs, simulated):
        print()
        where = f" ({r.hardware})" if mixed or "not a known profile" in r.hardware else ""
        print(f"{r.label}: {r.describe()}{where}")
        if "spec_decode_num_drafts" in r.metrics and r.scenario.speculative() is None:
            print(o.flagged("  (measured with speculative decoding, simulated without: give its {speculative_config}, "
                            "or keep it in the file with --metadata speculative_config=JSON)"))
        print(f"{'':<40} {'measured':>11} {'simulated':>11} {'error':>8}")
        for key, label, fmt in ROWS:
            if key not in r.metrics:
                continue
            meas, sim = r.metrics[key], s.get(key, math.nan)
            err = sim / meas - 1 if meas > 0 and math.isfinite(sim) else math.nan
            if key in ("median_ttft_ms", "median_tpot_ms", "output_throughput") and err == err:
                errors.append(abs(err))
            shown = f"{err:+.1%}" if err == err else "-"
            print(f"{label:<40} {fmt.format(meas):>11} {fmt.format(sim) if sim == sim else '-':>11} {shown:>8}")
    # A run whose file gives no output throughput (a figure copied from a report) has no point
    # on the chart, measured or simulated.
    charted = [(r, s) for r, s in zip(runs, simulated) if "output_throughput" in r.metrics]
    if charted:
        points = [(r.metrics["output_throughput"], r.metrics.get("p99_ttft_ms", math.nan)) for r, _ in charted]
        points += [(s["output_throughput"], s["p99_ttft_ms"]) for _, s in charted]
        symbols = [MEASURED] * len(charted) + [SIMULATED] * len(charted)
        print()
        print("\n".join(scatter(points, symbols=symbols, overlap=BOTH, y_label="TTFT p99 (ms, log scale)",
                                x_label=f"output throughput (tok/s)   {MEASURED} measured, {SIMULATED} simulated, "
                                        f"{BOTH} both")))
    if errors:
        print()
        print(f"TTFT p50, TPOT p50 and output throughput: simulated within {max(errors):.1%} of measured at worst, "
              f"{sum(errors) / len(errors):.1%} on average.")
    return EXIT_OK
