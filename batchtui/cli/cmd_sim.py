"""`batchtui sim`: one run, reported as `vllm bench serve` reports one, then what only the
simulator sees."""

from __future__ import annotations

import argparse
import math
import os
from datetime import datetime

from . import results
from .runner import Runner, show_progress_default

from . import args as a
from .exits import EXIT_OK, UserError
from .output import output_file
from .setup import build_setup, user_errors

HELP = "simulate one serving run and print a vllm bench serve style result"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = ("Simulate one vLLM replica serving a stream of requests and print the result as "
                     "`vllm bench serve` lays it out, then what only the simulator sees. Flags are "
                     "spelled as vllm serve and vllm bench serve spell them.")
    a.add_setup_args(p)
    a.add_traffic_args(p)
    a.add_result_args(p)
    o = a.add_result_json(p)
    o.add_argument("--per-request", metavar="FILE.csv",
                   help="write one CSV row per request as it finishes (- for standard output)")
    p.set_defaults(func=run)


def result_options(args) -> dict:
    """--percentile-metrics, --metric-percentiles and --goodput, as the result block takes them."""
    return {"percentile_metrics": tuple(args.percentile_metrics or results.DEFAULT_PERCENTILE_METRICS),
            "percentiles": tuple(args.metric_percentiles or results.DEFAULT_METRIC_PERCENTILES),
            "goodput": dict(args.goodput) if args.goodput else None}


def metadata(args) -> dict:
    out = {}
    for item in args.metadata or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"argument --metadata: expected KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def result_path(args, setup, date: str, *, model_id: str | None = None, label: str = results.BACKEND) -> str | None:
    """Where --save-result (or --append-result) writes, named as vllm bench serve names it:
    `label` (--label, else the default given) and the model's last name (`model_id`, else the
    simulated model's Hugging Face id)."""
    if not (args.save_result or args.append_result):
        if args.result_dir or args.result_filename:
            raise UserError("argument --result-filename/--result-dir: needs --save-result")
        return None
    w = setup.scenario.workload
    label = args.label or label
    model = (model_id or setup.deployment.model.hf_id or setup.deployment.model.id).split("/")[-1]
    concurrency = f"-concurrency{w.max_concurrency}" if w.max_concurrency else ""
    if w.ramp_up_strategy:
        name = (f"{label}-ramp-up-{w.ramp_up_strategy}-{w.ramp_up_start_rps:g}qps-"
                f"{w.ramp_up_end_rps:g}qps{concurrency}-{model}-{date}.json")
    else:
        rate = (w.trace_rate or math.inf) if w.arrival == "trace" else w.request_rate
        name = f"{label}-{rate}qps{concurrency}-{model}-{date}.json"
    if args.result_filename:
        name = args.result_filename
        return os.path.join(args.result_dir, name) if args.result_dir else name
    path = os.path.join(args.result_dir, name) if args.result_dir else name
    # vLLM's name is to the second, and its runs take minutes; a simulated run takes a second, so
    # two runs of one rate (a recipe's short and long prompts) would share a name: the later one
    # is numbered instead of replacing the earlier (--append-result adds to the file it names).
    stem, n = path.removesuffix(".json"), 2
    while not args.append_result and os.path.exists(path):
        path, n = f"{stem}-{n}.json", n + 1
    return path


def make_result_dir(args) -> None:
    """--result-dir, made if missing (as vllm bench serve makes it)."""
    if args.result_dir:
        try:
            os.makedirs(args.result_dir, exist_ok=True)
        except OSError as exc:
            raise UserError(f"argument --result-dir: cannot make {args.result_dir}: {exc.strerror or exc}") from None


def keep_earlier_results(path: str, sink) -> None:
    """--append-result: the file's earlier contents first, then (a newline between) this result, as
    vllm bench serve appends; copied in pieces into the new file, which replaces the old one whole."""
    if not os.path.isfile(path):
        return
    last = ""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as old:
            while piece := old.read(1 << 20):
                sink.write(piece)
                last = piece[-1]
    except OSError as exc:
        raise UserError(f"argument --append-result: cannot read {path}: {exc.strerror or exc}") from None
    if last and last != "\n":
        sink.write("\n")


@user_errors
def run(args: argparse.Namespace) -> int:
    if args.per_request == "-" and args.json:  # (the CSV's rows and the JSON would share standard output)
        raise UserError("argument --per-request: - (standard output) is not allowed with --json, which prints "
                        "the result there; give --per-request a file")
    setup = build_setup(args)
    opts = result_options(args)
    date = datetime.now().strftime("%Y%m%d-%H%M%S")
    meta = metadata(args)
    if setup.recorded:
        meta["recorded_flags"] = dict(setup.recorded)
    path = result_path(args, setup, date)
    make_result_dir(args)
    show = show_progress_default(json_output=args.json)
    with output_file(args.per_request, "--per-request") as csv_file, \
            output_file(path, "--result-filename") as result_file:
        sink = results.PerRequestCsv(csv_file) if csv_file is not None else None
        with Runner(show_progress=show, profiles=setup.profiles) as runner:
            result = runner.run(setup.scenario, percentiles=opts["percentiles"], goodput=opts["goodput"],
                                detailed=args.save_detailed, sink=sink)
        data = None
        if result_file is not None or args.json:
            data = results.bench_result(result, setup, date=date, label=args.label, percentiles=opts["percentiles"],
                                       detailed=args.save_detailed, metadata=meta)
        if result_file is not None:
            if args.append_result:
                keep_earlier_results(path, result_file)
            results.dump_json(result_file, data, indent=None)
    if args.json:
        import sys

        from .output import Sink
        results.dump_json(Sink(sys.stdout, "standard output"), data)
        return EXIT_OK
    print(results.setup_text(setup.scenario, setup.deployment, setup.config))
    print()
    print(results.result_block(result.summary, setup.config, setup.deployment, workload=setup.scenario.workload,
                              percentile_metrics=opts["percentile_metrics"], percentiles=opts["percentiles"],
                              goodput=bool(opts["goodput"])))
    if result.failed:
        print(f"Failed requests (first of {len(result.failed)}): {result.failed[0].error}")
    if args.per_request and args.per_request != "-":
        print(f"Per-request results: {args.per_request} ({sink.rows} rows)")
    if path:
        print(f"Result saved to {path}")
    return EXIT_OK
