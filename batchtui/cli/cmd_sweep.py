"""`batchtui sweep`: the same engine and traffic at several request rates (or max-num-seqs values):
a table, a chart, and the knee. Each point is one run, judged with `sim.curves.measure_rate`
(a rate above the saturated rate, `sim.curves.saturation`, has no steady state and is marked
unbounded); the knee is `sim.curves.find_knee`'s. Points run in a process pool with --jobs, with
the same results as one by one."""

from __future__ import annotations

import argparse
import math
import sys
import textwrap
from dataclasses import dataclass, replace

from . import results
from .asciichart import scatter
from .runner import Runner, default_jobs, show_progress_default
from sim.errors import ConfigError

from . import args as a
from . import options as o
from .exits import EXIT_OK, UserError
from .output import Sink, output_file
from .setup import build_setup, command_flags, flag_message, given_paths, user_errors


def add_arguments(p: argparse.ArgumentParser) -> None:
    from sim.curves import KNEE_LATENCY_FACTOR, SUSTAIN_REQUESTS

    p.description = (
        "Run the same engine and traffic at several request rates (or values of max-num-seqs), tabulate "
        "the points and chart throughput against latency (TTFT p99 over rates, TPOT p99 over "
        "max-num-seqs) with the knee marked. The knee is the last point before that latency passes "
        f"{KNEE_LATENCY_FACTOR:g}x its value at the first point, before throughput stops rising, or "
        "before a point with no steady state: above the saturated rate, the highest rate whose run of "
        f"{SUSTAIN_REQUESTS:,} requests keeps up (its latency does not climb). A trace ({o.flagged('{workload.trace_path}')}) is "
        "rescaled in time to each rate.")
    s = p.add_argument_group("what to sweep (one of)").add_mutually_exclusive_group(required=True)
    s.add_argument("--request-rates", type=o.rate_list, metavar="R,R,...",
                   help="request rates in req/s, such as 2,4,8,16,32,inf")
    s.add_argument("--max-num-seqs-values", type=o.positive_int_list, metavar="N,N,...",
                   help=o.flagged("values of {engine.max_num_seqs}, such as 16,32,64,128,256"))
    a.add_setup_args(p)
    a.add_traffic_args(p)
    out = p.add_argument_group("output")
    out.add_argument("--knee-factor", type=o.positive_float, default=KNEE_LATENCY_FACTOR, metavar="K",
                     help=f"latency p99 growth that marks the knee (default {KNEE_LATENCY_FACTOR:g})")
    out.add_argument("--csv", metavar="FILE", help="also write the points to a CSV file (- for standard output)")
    out.add_argument("--json", action="store_true", help="print the points as JSON instead")
    a.add_jobs_arg(p)
    p.set_defaults(func=run)


@dataclass
class Point:
    """One swept value's run: whole-run metrics, and whether it has a steady state."""

    value: float
    metrics: dict
    bounded: bool
    note: str
    error: str = ""
    """Why its first failed request failed (the API server's refusal), if any did."""


def saturation_task(task: tuple):
    """The saturated rate of the sweep's traffic (`sim.curves.saturation`): (scenario, requests)."""
    from sim.curves import OVERLOAD_PROMPTS, overload_prompts, runner, saturation

    scenario, n = task
    return saturation(runner(scenario, keep_requests=False, api_server=True), n,
                      overload_prompts=overload_prompts(scenario, max(n, OVERLOAD_PROMPTS)))


def point_task(task: tuple) -> Point:
    """Run one point (a pool worker's job): (scenario, swept dial, value, saturated rate, requests)."""
    from sim.curves import measure_rate, runner

    scenario, swept, value, saturated, n = task
    if swept == "max_num_seqs":
        scenario = scenario.with_engine(max_num_seqs=value)
        rate = scenario.workload.trace_rate if scenario.workload.arrival == "trace" else scenario.workload.request_rate
        if scenario.workload.arrival == "trace" and not rate:
            return _whole_trace_point(scenario, value)
    else:
        rate = value
    # Exactly the requests asked for (--num-prompts): a point is never rerun longer, so it reads
    # as `sim` at that rate; a point with no steady window is judged on the whole run.
    point = measure_rate(runner(scenario, keep_requests=False, api_server=True), float(rate or math.inf),
                         num_prompts=n, saturated=saturated, min_window=1, max_requests=n)
    failed = point.summary.failed
    return Point(value, point.metrics, point.bounded, point.note, failed[0].error if failed else "")


def _whole_trace_point(scenario, value) -> Point:
    """A trace at its own timing (no rate to judge against saturation): its E2E trend only."""
    from sim.curves import BACKLOG_SLOPE, latency_percentiles, steady_window
    from sim.engine import run_scenario

    summary = run_scenario(scenario, keep_records=True, keep_requests=False, api_server=True)
    window, _ = steady_window(summary.records)
    stats = latency_percentiles(window if len(window) else summary.records)
    bounded = stats["e2e_slope"] <= BACKLOG_SLOPE
    note = "" if bounded else f"the run does not settle (E2E climbs {stats['e2e_slope'] * 1000:.0f} ms per second of arrivals)"
    return Point(value, summary.metrics, bounded, note, summary.failed[0].error if summary.failed else "")


@user_errors
def run(args: argparse.Namespace) -> int:
    from sim.curves import find_knee
    from sim.workload import trace_requests

    by_rate = args.request_rates is not None
    if by_rate and args.request_rate is not None:
        raise UserError(o.flagged("argument {workload.request_rate}: not allowed with --request-rates"))
    if not by_rate and args.max_num_seqs is not None:
        raise UserError(o.flagged("argument {engine.max_num_seqs}: not allowed with --max-num-seqs-values"))
    if by_rate and args.ramp_up_strategy:
        raise UserError(o.flagged("argument {workload.ramp_up_strategy}: not allowed with --request-rates (each "
                                  "point has its rate)"))
    setup = build_setup(args)
    if not by_rate and setup.config.batching != "continuous":
        raise UserError(o.flagged(f"argument --max-num-seqs-values: {{engine.max_num_seqs}} is a continuous-batching "
                                  f"dial; {setup.config.batching} batching ignores it (see {{engine.max_batch_size}})"))
    swept = "request_rate" if by_rate else "max_num_seqs"
    values = args.request_rates if by_rate else args.max_num_seqs_values
    sc = setup.scenario
    for v in ([] if by_rate else values):  # refuse a bad point before running any
        try:
            sc.with_engine(max_num_seqs=v).engine_config(setup.profiles)
        except ConfigError as exc:
            raise UserError(flag_message(exc, given_paths(args) | {"engine.max_num_seqs"},
                                         {**command_flags(args), "engine.max_num_seqs": "--max-num-seqs-values"})) from None
    for v in (values if by_rate else []):
        w = sc.workload
        try:
            (replace(w, trace_rate=v) if w.arrival == "trace" and v != math.inf else w.with_rate(v)).validate()
        except ConfigError as exc:
            raise UserError(flag_message(exc, given_paths(args) | {"workload.request_rate", "workload.trace_rate"},
                                         {**command_flags(args), "workload.request_rate": "--request-rates",
                                          "workload.trace_rate": "--request-rates"})) from None
    w = sc.workload
    n = (w.trace_requests or len(trace_requests(w))) if w.arrival == "trace" else w.num_prompts
    lat_key, lat_name = ("p99_ttft_ms", "TTFT") if by_rate else ("p99_tpot_ms", "TPOT")
    jobs = args.jobs or default_jobs()

    with output_file(args.csv, "--csv") as csv_file:
        with Runner(show_progress=show_progress_default(args.json), profiles=setup.profiles) as runner:
            saturated = saturation = None
            if by_rate:
                runner.expect(None)
                runner.update(0, "finding the saturated rate")
                saturation = saturation_task((sc, n))
                backlog = saturation.backlog
                results.refuse_unserved([(backlog.metrics, backlog.failed[0].error if backlog.failed else "")], n)
                saturated = saturation.rate
                runner.expect(n * len(values))
            else:
                runner.expect(n * len(values))
            tasks = [(sc, swept, v, saturated, n) for v in values]
            points = runner.map(point_task, tasks, jobs, description=f"sweeping {swept}",
                                requests=lambda p: p.metrics["completed"])
            results.refuse_unserved([(p.metrics, p.error) for p in points], n)
        knee = find_knee(values, [p.metrics["output_throughput"] for p in points],
                         [p.metrics[lat_key] for p in points], factor=args.knee_factor,
                         latency_name=lat_name, bounded=[p.bounded for p in points])
        knee_index, explain = knee.index, None
        if not by_rate:
            knee_index, explain = _seats_bind(values, points, knee)
        if csv_file is not None:
            write_csv(csv_file, swept, points, knee_index)

    if args.json:
        results.dump_json(Sink(sys.stdout, "standard output"), {
            "swept": swept, "saturated_rate": saturated, "saturation": saturation_json(saturation),
            "knee_index": knee_index,
            "knee_reason": (knee.reason or None) if explain is None else "not_binding",
            "knee_latency": lat_key, "knee_factor": args.knee_factor,
            "points": [{swept: p.value, "bounded": p.bounded, "note": p.note or None, **p.metrics} for p in points],
        })
        return EXIT_OK
    label = "rate" if by_rate else "max_num_seqs"
    print(results.setup_text(sc, setup.deployment, setup.config, swept=swept))
    print()
    print(results.sweep_table(swept, [p.value for p in points], points, knee_index,
                             bounded=[p.bounded for p in points]))
    print()
    if saturation is not None:
        print(textwrap.fill(saturation_text(saturation, n), width=100))
    print(textwrap.fill(explain or knee.explain(values, label, args.knee_factor, lat_name), width=100))
    print()
    chart = scatter([(p.metrics["output_throughput"], p.metrics[lat_key]) for p in points],
                    highlight=knee_index, y_label=f"{lat_name} p99 (ms, log scale)",
                    x_label="output throughput (tok/s)   o = point, * = knee")
    print("\n".join(chart))
    if args.csv and args.csv != "-":
        print(f"\nPoints written to {args.csv}")
    return EXIT_OK


_API_SUSTAINS = "what the API server sustains (its work per request at this traffic's lengths)"
_AHEAD = ("overloaded, the API server takes requests in ahead of the tokens it streams, and streams them once "
          "requests stop coming")


def saturation_text(sat, n: int) -> str:
    """What `sim.curves.saturation` found, in a paragraph: the saturated rate and how it was
    measured; with a KV-thrashing or degraded full queue, what that queue's rate means beside it
    (below the saturated rate: a burst above it does not drain; above it: a full queue completes
    more than steady traffic keeps up with, for a while)."""
    backlog = sat.backlog.metrics["request_throughput"]
    fq = sat.full_queue_rate
    if not sat.exact:
        how = "preempts and serves" if sat.thrashes else "serves"
        return (f"With its queue full the engine {how} {fq:.2f} req/s ({n:,} "
                f"requests queued at once: {backlog:.2f}); lighter traffic may sustain more (not searched).")
    if sat.thrashes or sat.degraded or sat.lockstep:
        return _searched_text(sat, n, backlog)
    if sat.rate == sat.api_server_rate:
        return (f"Saturated rate: {sat.rate:.2f} req/s, {_API_SUSTAINS}; a point above it has no steady state. "
                f"With its queue full the run completes {fq:.2f} req/s, more than that only for a while: {_AHEAD}. "
                + o.flagged("More {engine.api_server_count} raise what it sustains."))
    return (f"Saturated rate: {sat.rate:.2f} req/s, what the engine serves with its queue full (traffic "
            f"arriving faster, {sat.overload.metrics['completed']:,} requests); a point above it has no "
            f"steady state. {n:,} requests queued at once, from a standing start, complete {backlog:.2f} req/s.")


def _searched_text(sat, n: int, backlog: float) -> str:
    """`saturation_text` for a rate searched on long runs (the full queue thrashes, is degraded or
    serves less the deeper it stands)."""
    fq = sat.full_queue_rate
    if sat.rate == sat.api_server_rate:
        head = (f"Saturated rate: {sat.rate:.2f} req/s, {_API_SUSTAINS}: its run of {sat.horizon:,} requests keeps "
                "up and no faster traffic can; a point above it has no steady state.")
    else:
        above = "" if sat.above is None else f" ({sat.above:.2f} falls behind)"
        head = (f"Saturated rate: {sat.rate:.2f} req/s, the highest rate whose run of {sat.horizon:,} requests "
                f"keeps up{above}; a point above it has no steady state.")
    m = sat.overload.metrics["completed"]
    behind = "" if sat.above is None else f"; a run of {sat.horizon:,} at {sat.above:.2f} falls behind"
    if sat.thrashes:
        preempts = "With its queue full the engine preempts (the KV cache holds fewer requests than the seats admit)"
        fewer = o.flagged("fewer {engine.max_num_seqs} keep the batch within the cache.")
        if fq <= sat.rate:
            return (f"{head} {preempts} and serves only {fq:.2f} req/s ({n:,} queued at once: {backlog:.2f}): above "
                    f"that rate a burst that fills the queue does not drain; {fewer}")
        why = f": {_AHEAD}" if fq > sat.api_server_rate else behind
        return (f"{head} {preempts} and completes {fq:.2f} req/s over {m:,} requests ({n:,} queued at once: "
                f"{backlog:.2f}), more than it sustains{why}; {fewer}")
    if sat.lockstep:
        return (f"{head} With a deep queue (traffic offered far faster than it serves) the replica serves only "
                f"{fq:.2f} req/s, less than a shallower queue completes: it refills every seat the step it frees, so "
                "the requests it admits together finish together, in waves that steady traffic does not lock into.")
    if fq <= sat.rate:
        return (f"{head} With its queue full the replica serves only {fq:.2f} req/s, less than {n:,} requests "
                f"queued at once complete ({backlog:.2f}): "
                + o.flagged("so an overloaded API server does, taking requests in ahead of the tokens it streams "
                            "(more {engine.api_server_count} raise what it serves)."))
    return (f"{head} With its queue full the replica completes {fq:.2f} req/s over {m:,} requests, less than {n:,} "
            f"queued at once ({backlog:.2f}) yet more than it sustains{behind}: "
            + o.flagged("so an overloaded API server does for a while, taking requests in ahead of the tokens it "
                        "streams (more {engine.api_server_count} raise what it sustains)."))


def saturation_json(sat) -> dict | None:
    if sat is None:
        return None
    return {"rate": sat.rate, "exact": sat.exact, "backlog_rate": sat.backlog.metrics["request_throughput"],
            "full_queue_rate": sat.full_queue_rate, "thrashes": sat.thrashes, "degraded": sat.degraded,
            "lockstep": sat.lockstep,
            "api_server_rate": sat.api_server_rate if math.isfinite(sat.api_server_rate) else None,
            "horizon": sat.horizon,
            "searched": [{"request_rate": r, "keeps_up": ok, "e2e_slope": slope} for r, ok, slope in sat.searched]}


def _seats_bind(values, points, knee) -> tuple[int | None, str | None]:
    """Over max_num_seqs, a flat stretch where fewer requests run than the seats allow is the
    traffic's doing, not a knee: say so instead."""
    for j, (v, p) in enumerate(zip(values, points)):
        if p.metrics["max_running"] < v and (knee.index is None or j <= knee.index + 1):
            if knee.index is not None and knee.reason != "throughput":
                return knee.index, None
            return None, (f"No knee: from max_num_seqs {v} on, at most {p.metrics['max_running']} requests "
                          "ran at once, so the seats never filled: the traffic, not max_num_seqs, limits "
                          + o.flagged("the batch (raise the rate: {workload.request_rate}, which also rescales a "
                                      "trace)."))
    return knee.index, None


def write_csv(handle, swept: str, points, knee: int | None) -> None:
    import csv

    rows = [{swept: results.rate_text(p.value) if swept == "request_rate" else p.value,
             "bounded": int(p.bounded), **results.flat_metrics(p.metrics), "knee": int(i == knee)}
            for i, p in enumerate(points)]
    writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
