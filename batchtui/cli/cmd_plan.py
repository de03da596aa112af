"""`batchtui plan`: the highest request rate one replica sustains within a latency SLO, found on
several seeds and confirmed on a longer run, then the replicas for a peak checked by simulating
the peak behind a router; or (`--offline N`) the batch and job time of N queued requests.

Exit codes: 0 done; 1 no rate meets the SLO (the closest point is shown), like grep's 1 for
"no match"; 2 a mistake in the command."""

from __future__ import annotations

import argparse
import math
import sys
import textwrap
from dataclasses import replace

from . import results
from .runner import Runner, default_jobs, show_progress_default
from sim import planning, rate_plan

from . import args as a
from . import options as o
from . import vllm_lines
from .lengths import lengths_text, planned_lengths
from .exits import EXIT_FAILURE, EXIT_OK, UserError
from .output import Sink
from .setup import Setup, build_setup, user_errors


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Find the highest request rate one replica serves within a latency SLO (p99 TTFT and/or p99 "
        "TPOT), for the traffic described (its lengths' spread included), on several seeds: the saturated "
        "rate first (what a replica serves with its queue full), then a coarse sweep at 10 %, 20 %, ... 90 % "
        "of it that stops at the first miss, then bisection to within 1 % of it. Every point is judged on "
        f"its steady state (at least {rate_plan.PLAN_MIN_WINDOW} requests and "
        f"{rate_plan.PLAN_MIN_WINDOW_S:g} s of arrivals, the run lengthened until it has them); no rate "
        "above the saturated rate is ever an answer (when a full queue thrashes the KV cache, the sweep "
        "goes on past it and the long runs judge). The answer, the lowest seed's, is rerun with "
        f"{rate_plan.PLAN_CONFIRM_PROMPTS:,} requests on those seeds and {rate_plan.PLAN_CONFIRM_NEW_SEEDS} "
        "unused ones, and stepped down until all meet the SLO and a seed not yet tried is predicted to with "
        f"{rate_plan.PLAN_CONFIDENCE * 100:g} % confidence. With --peak-rate, the replicas needed, checked by "
        "simulating the peak behind round-robin and least-outstanding-requests routers. Then the vllm "
        "serve line with every dial assumed, and the vllm bench serve line to verify on a GPU. "
        "With --offline N, the settings and job time for N queued requests instead. Exit status 1 "
        "when no rate meets the SLO (the closest point is shown), 2 for a mistake in the command.")
    a.add_slo_args(p)
    a.add_setup_args(p)
    a.add_traffic_args(p, rate_flag=False,
                       count_help=f"requests a point starts from (default {rate_plan.PLAN_NUM_PROMPTS}, at "
                                  f"least {rate_plan.PLAN_MIN_PROMPTS}; runs grow until steady)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    a.add_jobs_arg(p)
    p.set_defaults(func=run)


def seed_task(task: tuple) -> rate_plan.RatePlan:
    """One seed's search in this process (`seed_chain`, each run made here), its runs'
    per-request records dropped."""
    return seed_chain(task)(run_task)


def seed_chain(task: tuple):
    """One seed's search as a chain of runs (`Runner.chains`): the search here, each run a pool
    worker's job (`run_task`); the same search as `seed_task`'s, its records dropped too."""
    scenario, slo, n, min_window, min_window_s = task

    def chain(run) -> rate_plan.RatePlan:
        return _judged(rate_plan.plan_rate(lambda rate, count: run((scenario, rate, count)), slo, n,
                                           min_window=min_window, min_window_s=min_window_s))

    return chain


def run_task(task: tuple):
    """One run of a seed's search (a pool worker's job): the scenario at a rate and length, with
    its records (the search judges its steady window from them)."""
    from sim.curves import runner as curve_runner

    scenario, rate, n = task
    return curve_runner(scenario, keep_requests=False, api_server=True)(rate, n)


def _judged(plan: rate_plan.RatePlan) -> rate_plan.RatePlan:
    """A seed's search with its runs' per-request records dropped (its points are judged)."""
    for p in [plan.saturated, *plan.points]:
        p.summary = replace(p.summary, records=[])
    plan.saturation.backlog = plan.saturated.summary
    return plan


def confirm_task(task: tuple) -> rate_plan.PlanPoint:
    """One confirmation run (a pool worker's job), its per-request records dropped."""
    from sim.curves import runner as curve_runner

    scenario, slo, rate, saturated, n, min_window, min_window_s = task
    p = rate_plan.confirm_point(curve_runner(scenario, keep_requests=False, api_server=True), slo, rate, saturated,
                               n, min_window, min_window_s)
    p.summary = replace(p.summary, records=[])
    return p


def check_peak_rate(peak: float, replicas: int) -> None:
    """Refuse a peak the replicas check cannot simulate: it runs two minutes of the peak, and
    enough requests for every replica, within the requests a run holds."""
    from sim.limits import MAX_NUM_PROMPTS

    n = rate_plan.router_prompts(min(peak, MAX_NUM_PROMPTS), replicas)
    if n > MAX_NUM_PROMPTS:
        most = MAX_NUM_PROMPTS / rate_plan.ROUTER_MIN_SECONDS
        where = (f"at most {most:,.0f} req/s: " if replicas == 1 else
                 f"{peak:g} req/s needs {replicas - rate_plan.ROUTER_MAX_EXTRA:,} replicas, and ")
        raise UserError(f"argument --peak-rate: {where}the replicas check simulates "
                        f"{rate_plan.ROUTER_MIN_SECONDS:g} s of the peak and {rate_plan.ROUTER_MIN_PER_REPLICA:,} "
                        f"requests per replica, at most {MAX_NUM_PROMPTS:,} requests")


def router_task(task: tuple) -> rate_plan.RouterCheck:
    scenario, policy, replicas, peak, slo, n = task
    return rate_plan.check_router(scenario, scenario.profiles(), policy, replicas, peak, slo, n)


def _served(summary) -> tuple[dict, str]:
    """A run's metrics and its first failure's error, for `results.refuse_unserved`."""
    return summary.metrics, summary.failed[0].error if summary.failed else ""


def first_replicas(args: argparse.Namespace, slo_rate: float) -> int:
    """The replicas proposed for --peak-rate when one replica meets the SLO up to `slo_rate`
    (then checked behind a router): `sim.planning.replicas_needed`, as step 16 counts them."""
    return planning.replicas_needed(args.peak_rate, slo_rate, args.headroom)


@user_errors
def run(args: argparse.Namespace) -> int:
    a.check_slo_args(args, "plan")
    if args.peak_rate is not None:
        check_peak_rate(args.peak_rate, 1)
    if args.offline is not None:
        return plan_offline(args)
    setup = build_setup(args, rate_flag=False)
    if setup.config.batching != "continuous":
        print("note: vLLM always batches continuously; the plan models "
              f"{setup.config.batching} batching as asked", file=sys.stderr)
    slo = planning.Slo(args.ttft_p99, args.tpot_p99)
    n = args.num_prompts or rate_plan.PLAN_NUM_PROMPTS
    from sim.curves import at_rate

    sc = at_rate(setup.scenario, setup.scenario.workload.request_rate, n)
    setup = setup.with_scenario(sc)
    jobs = args.jobs or default_jobs()
    goodput = {k: v for k, v in (("ttft", args.ttft_p99), ("tpot", args.tpot_p99)) if v is not None}

    with Runner(show_progress=show_progress_default(args.json), profiles=setup.profiles) as runner:
        runner.expect(None)
        window = (rate_plan.PLAN_MIN_WINDOW, rate_plan.PLAN_MIN_WINDOW_S)  # passed on: workers import afresh

        def plan_seeds(scenarios) -> list[rate_plan.RatePlan]:
            # (each seed's runs one after another, the seeds' at once: more seeds than workers
            # keep them all busy to the end)
            return runner.chains(run_task, [seed_chain((x, slo, n, *window)) for x in scenarios], jobs,
                                 description=f"searching {len(scenarios)} seeds")

        def confirm_seeds(scenarios, rate: float, saturated: float) -> list[rate_plan.PlanPoint]:
            runner.update(0, f"confirming {rate:.2f} req/s on longer runs")
            return runner.map(confirm_task, [(x, slo, rate, saturated, rate_plan.PLAN_CONFIRM_PROMPTS, *window)
                                             for x in scenarios], jobs)

        # (a rate's confirmation runs a pool's width at a time: they stop at a batch that misses)
        result = rate_plan.seeded_plan(sc, args.seeds, plan_seeds, confirm_seeds, batch=jobs)
        results.refuse_unserved([_served(p.saturated.summary) for p in result.plans], n)
        cause = None
        if not all(p.feasible for p in result.plans) and setup.config.batching != "continuous":
            cont = setup.with_scenario(replace(sc, engine={k: v for k, v in sc.engine.items()
                                                           if k not in ("batching", "max_batch_size",
                                                                        "max_queue_delay")}))
            runner.update(0, "trying continuous batching")
            cplan = seed_task((cont.scenario, slo, n, *window))
            if cplan.feasible:
                cause = cplan
        checks: list[list[rate_plan.RouterCheck]] = []
        replicas = None
        if result.feasible and args.peak_rate is not None:
            first = first_replicas(args, result.rate)
            check_peak_rate(args.peak_rate, first + rate_plan.ROUTER_MAX_EXTRA)

            def check(count: int) -> list[rate_plan.RouterCheck]:
                runner.update(0, f"checking {count} replicas at the peak")
                tasks = [(sc, policy, count, args.peak_rate, slo,
                          rate_plan.router_prompts(args.peak_rate, count)) for policy in rate_plan.ROUTER_POLICIES]
                return runner.map(router_task, tasks, jobs)

            replicas, checks = rate_plan.replicas_for_peak(first, check)

    lengths = planned_lengths(sc, n)
    serve = vllm_lines.serve_command(setup)
    bench = (vllm_lines.bench_command(setup, result.rate, max(n, rate_plan.PLAN_CONFIRM_PROMPTS // 4), goodput)
             if result.feasible else None)
    if args.json:
        results.dump_json(Sink(sys.stdout, "standard output"), plan_json(result, slo, args, replicas, checks,
                                                                         serve, bench, cause, lengths))
        return EXIT_OK if result.feasible else EXIT_FAILURE
    print(results.setup_text(sc, setup.deployment, setup.config, swept="request_rate"))
    print(f"SLO: {slo.text()}.")
    print(_fill(lengths_text(lengths)))
    print()
    print_plan(result, slo, args, replicas, checks, serve, bench, cause, setup)
    return EXIT_OK if result.feasible else EXIT_FAILURE


def saturation_text(result) -> str:
    """The saturated rate the seeds found, and what it bounds; where a full queue's rate is only a
    guide (it thrashes the KV cache, or serves less than the burst), what it says beside the answer."""
    sats = [p.saturation for p in result.plans]
    low = min(sats, key=lambda x: x.rate)
    if result.cap is not None:
        return (f"Saturated rate: {result.cap:.2f} req/s (lowest of the seeds), what a replica serves with its "
                "queue full; no answer is above it.")
    fq = low.full_queue_rate
    checked = (f"what steady traffic sustains may be more or less than that (not searched), so each answer was "
               f"checked to keep up over {rate_plan.PLAN_CONFIRM_PROMPTS:,} requests.")
    if low.lockstep:
        return (f"With a deep queue a replica serves {fq:.2f} req/s (lowest of the seeds), less than a shallower "
                "queue completes: it refills every seat the step it frees, so the requests it admits together "
                f"finish together, in waves that steady traffic does not lock into; {checked}")
    if not low.thrashes:
        return o.flagged(
            f"With its queue full a replica serves {fq:.2f} req/s (lowest of the seeds), less than the requests "
            f"queued at once complete ({low.backlog.metrics['request_throughput']:.2f}): so an overloaded API server "
            f"does, taking requests in ahead of the tokens it streams (more {{engine.api_server_count}} raise what "
            f"it serves); {checked}")
    text = (f"With its queue full a replica preempts (the KV cache holds fewer requests than the seats admit) and "
            f"serves {fq:.2f} req/s (lowest of the seeds); {checked}")
    if result.feasible and result.rate > fq:
        text += (" The answer is above it: at that rate a burst that fills the queue does not drain (fewer "
                 "{engine.max_num_seqs} keep the batch within the cache).")
    return o.flagged(text)


def limit_text(limiting) -> str:
    """What sets the limit of the seed's plan that set the answer (a sentence, with its leading
    space; empty when nothing above it was seen to miss)."""
    if limiting.limited_by == "throughput" and limiting.best.rate >= limiting.ceiling:
        return o.flagged(f" That is the most the API server sustains ({limiting.ceiling:.2f} req/s; faster traffic "
                         "queues in front of the engine without bound): it, not the SLO, sets the limit (more "
                         "{engine.api_server_count} raise it).")
    if limiting.limited_by == "throughput":
        return " The replica is near its capacity there: its throughput, not the SLO, sets the limit."
    if limiting.first_miss is not None:
        return f" Just above ({limiting.bracket_high:.2f} req/s): {'; '.join(limiting.first_miss.misses)}."
    return ""


def predicted_text(predicted: dict) -> str:
    names = {"p99_ttft_ms": ("p99 TTFT", "{:.1f}"), "p99_tpot_ms": ("p99 TPOT", "{:.2f}")}
    return ", ".join(f"{names[k][0]} {names[k][1].format(v)} ms" for k, v in predicted.items())


def _seed_list(seeds) -> str:
    return ", ".join(str(s) for s in seeds)


def worst_window(points) -> dict:
    """The confirmation runs' worst p99s (each the highest over the seeds)."""
    w = dict(points[0].window)
    for key in ("p99_ttft_ms", "p99_tpot_ms"):
        w[key] = max(p.window[key] for p in points)
    return w


def _fill(text: str) -> str:
    return textwrap.fill(text, width=100, subsequent_indent="  " if text.startswith("  ") else "")


def router_note(checked: list[rate_plan.RouterCheck]) -> str | None:
    """Why least-outstanding-requests' p99 TTFT is longer than round-robin's over one count of
    replicas, when it is: it balances requests held, while a replica's TTFT tail comes from
    requests reaching it during an earlier one's prefill (`RouterCheck.behind_prefill`)."""
    by = {c.policy: c for c in checked}
    rr, lor = by.get("round-robin"), by.get("least-outstanding-requests")
    if (rr is None or lor is None or lor.window["p99_ttft_ms"] <= rr.window["p99_ttft_ms"]
            or lor.behind_prefill <= rr.behind_prefill):
        return None
    return (f"  (Least-outstanding-requests balances requests held, not prefills: {lor.behind_prefill:.0%} of "
            f"its requests came to a replica before an earlier one there had its first token, "
            f"{rr.behind_prefill:.0%} with round-robin.)")


def print_plan(result, slo, args, replicas, checks, serve, bench, cause, setup) -> None:
    limiting = result.limiting
    seeds = ", ".join(str(s) for s in result.seeds)
    print(f"Points run on seed {result.seeds[result.plans.index(limiting)]} (the one that sets the answer; "
          f"seeds {seeds} searched):")
    print(results.plan_table(limiting))
    print()
    print(_fill(saturation_text(result)))
    for warning in result.warnings:
        print(f"warning: {warning}")
    if not result.feasible:
        if not all(p.feasible for p in result.plans):
            p = limiting.closest
            w = p.window
            text = (f"No request rate meets the SLO on seed {result.seeds[result.plans.index(limiting)]}. The "
                    f"closest point is {p.rate:.2f} req/s, where {' and '.join(p.misses)} (p99 TTFT "
                    f"{w['p99_ttft_ms']:.1f} ms, p99 TPOT {w['p99_tpot_ms']:.2f} ms). ")
            if cause is not None:
                text += (f"The cause is the batching policy ({setup.config.batching}): continuous batching, "
                         f"as vLLM runs, meets this SLO up to {cause.best.rate:.2f} req/s with the same "
                         "hardware and dials (drop {engine.batching}).")
            else:
                text += ("Even a nearly idle replica misses it: lower latency needs a faster GPU, "
                         "{tensor_parallel_size}, {kv_cache_dtype} fp8, or a smaller model.")
            print(_fill(o.flagged(text)))
        else:
            rate, points = result.confirm_tries[-1]
            misses = result.holds(points)  # (a run that missed, or a new seed predicted to)
            print(_fill(f"The seeds' answer ({min(result.rates):.2f} req/s) did not hold on longer runs of "
                        f"seeds {_seed_list(result.confirm_seeds)}: down to {rate:.2f} req/s it still missed "
                        f"({'; '.join(misses)}). Latency at this SLO is too close to the limit to plan on."))
        return
    rates = ", ".join(f"{r:.2f}" for r in result.rates)
    points = result.confirm_points
    w = worst_window(points)
    runs = f"{min(p.summary.metrics['completed'] for p in points):,}"
    text = (f"Highest rate meeting the SLO: {result.rate:.2f} req/s per replica. The seeds' limits: {rates} "
            f"req/s (spread {result.spread:.2f} req/s, each within {limiting.precision:.2f}); ")
    if result.rate < min(result.rates):
        text += (f"the lowest, {min(result.rates):.2f}, missed on longer runs of seeds "
                 f"{_seed_list(result.confirm_seeds)}, so the answer was stepped down until runs of {runs}+ "
                 "requests on each met it.")
    else:
        text += f"confirmed on seeds {_seed_list(result.confirm_seeds)} with {runs}+ requests each."
    text += (f" A seed not yet tried stays within the SLO with {rate_plan.PLAN_CONFIDENCE:.0%} confidence "
             f"(predicted {predicted_text(result.predicted)}).")
    print(_fill(text + limit_text(limiting)))
    print(_fill(f"  At that rate (the worst confirmation run): p99 TTFT {w['p99_ttft_ms']:.1f} ms, p99 TPOT "
                f"{w['p99_tpot_ms']:.2f} ms, about {result.rate * w['mean_output_len']:,.0f} output tok/s, "
                f"{result.rate * w['mean_e2e_ms'] / 1000:.0f} requests running."))
    if args.peak_rate is not None:
        print()
        per_replica = planning.planned_rate(result.rate, args.headroom)
        first = first_replicas(args, result.rate)
        print(_fill(f"Replicas for a peak of {args.peak_rate:g} req/s with {args.headroom:.0%} headroom (each "
                    f"replica planned at {1 - args.headroom:.0%} of {result.rate:.2f} = {per_replica:.2f} req/s): "
                    f"ceil({args.peak_rate:g} / {per_replica:.2f}) = {first}; checked by simulating the peak "
                    "behind a router:"))
        for checked in checks:
            for ch in checked:
                cw = ch.window
                verdict = "meets" if ch.ok else "misses: " + "; ".join(ch.misses)
                print(f"  {ch.replicas} replicas, {ch.policy:<27} p99 TTFT {cw['p99_ttft_ms']:7.1f} ms  "
                      f"p99 TPOT {cw['p99_tpot_ms']:6.2f} ms  {verdict}")
        why = router_note(checks[-1]) if checks else None
        if why:
            print(_fill(why))
        if replicas is None:
            print(_fill(f"Even {first + rate_plan.ROUTER_MAX_EXTRA} replicas miss the SLO at the peak: plan "
                        "with more headroom or a faster setup."))
        else:
            capacity = replicas * result.rate
            print(_fill(f"Use {replicas} replicas: {replicas} x {result.rate:.2f} = {capacity:.1f} req/s of "
                        f"capacity, {capacity / args.peak_rate - 1:.0%} above the peak; each carries "
                        f"{args.peak_rate / replicas:.1f} req/s at the peak, {args.peak_rate / replicas / result.rate:.0%} "
                        "of its limit."))
    print()
    print("vLLM command for each replica (every dial the simulation assumed):")
    print("  " + serve)
    print("Verify on the real GPU (one replica at the planned rate):")
    print("  " + bench)
    note = vllm_lines.bench_lengths_note(setup.scenario.workload)
    if note:
        print(_fill(f"({note})"))
    if setup.scenario.workload.turns > 1:
        print(_fill(f"(Rates here count new conversations of {setup.scenario.workload.turns} turns a second; "
                    "vllm bench serve sends single requests, so verify with a multi-turn client.)"))


def plan_json(result, slo, args, replicas, checks, serve, bench, cause, lengths) -> dict:
    limiting = result.limiting
    return {
        "slo": {"p99_ttft_ms": slo.ttft_p99_ms, "p99_tpot_ms": slo.tpot_p99_ms},
        "feasible": result.feasible,
        "saturated_rate": result.cap,
        "full_queue_rate": min(p.saturation.full_queue_rate for p in result.plans),
        "thrashes": any(p.saturation.thrashes for p in result.plans),
        "lengths": lengths,
        "confidence": rate_plan.PLAN_CONFIDENCE,
        "predicted": result.predicted if result.feasible else None,
        "max_rate": result.rate if result.feasible else None,
        "seeds": result.seeds,
        "seed_rates": [p.best.rate if p.feasible else None for p in result.plans],
        "spread": result.spread if result.feasible else None,
        "precision": limiting.precision if result.feasible else None,
        "limited_by": limiting.limited_by or None,
        "confirm_seeds": result.confirm_seeds,
        "confirm_tries": [{"request_rate": rate, "meets_slo": not result.holds(points),
                           "runs": [results.plan_point_json(p) for p in points]}
                          for rate, points in result.confirm_tries],
        "at_max_rate": (results.plan_point_json(max(result.confirm_points, key=lambda p: p.window["p99_tpot_ms"]))
                        if result.feasible else None),
        "closest": None if all(p.feasible for p in result.plans) else results.plan_point_json(limiting.closest),
        "policy_cause": None if cause is None else {"continuous_max_rate": cause.best.rate},
        "warnings": result.warnings,
        "peak_rate": args.peak_rate,
        "headroom": args.headroom,
        "replicas": replicas,
        "replica_checks": [{"replicas": c.replicas, "policy": c.policy, "meets_slo": c.ok, "misses": c.misses,
                            "p99_ttft_ms": c.window["p99_ttft_ms"], "p99_tpot_ms": c.window["p99_tpot_ms"],
                            "requests_per_replica": c.per_replica, "behind_prefill": c.behind_prefill}
                           for checked in checks for c in checked],
        "vllm_command": serve,
        "vllm_bench_command": bench,
        "points": [results.plan_point_json(p) for p in [limiting.saturated, *limiting.points]],
    }


def plan_offline(args: argparse.Namespace) -> int:
    import numpy as np

    from sim.workload import generate

    n = args.offline
    setup = build_setup(args, rate_flag=False)  # (offline: vLLM's LLM class's defaults)
    sc = setup.scenario.with_workload(num_prompts=n, request_rate=math.inf)
    setup = Setup(sc, setup.profiles)
    if setup.config.batching != "continuous":
        raise UserError(o.flagged("argument {engine.batching}: --offline plans vLLM's continuous batching only"))
    d, cfg = setup.deployment, setup.config
    specs = generate(sc.workload, np.random.default_rng(sc.seed))
    layout = d.kv_layout
    plan = planning.offline_plan([(s.prompt_len, s.output_len) for s in specs], d.usable_blocks, d.block_size,
                                 cfg.max_model_len, cfg.max_num_seqs, args.max_num_seqs, layout.window_groups,
                                 layout.window_blocks)
    kv_fit, per_request = plan.kv_fit, plan.peak_blocks
    runs = []
    with Runner(show_progress=show_progress_default(args.json), profiles=setup.profiles) as runner:
        runner.expect(n * len(plan.candidates))
        for why, seats in plan.candidates:
            run_sc = sc.with_engine(**planning.offline_engine(seats, cfg.max_num_batched_tokens,
                                                              args.max_num_batched_tokens is not None))
            config = run_sc.engine_config(setup.profiles)
            runs.append((why, config, runner.run(run_sc, results.seats_words(seats)).summary))
    results.refuse_unserved([_served(summary) for _, _, summary in runs], n)
    _, config, best = runs[planning.quickest([(c.max_num_seqs, s.metrics["duration"]) for _, c, s in runs])]
    m = best.metrics
    llm = vllm_lines.llm_call(setup, config)
    if args.json:
        results.dump_json(Sink(sys.stdout, "standard output"), {
            "offline": True, "num_prompts": n, "kv_fit_max_num_seqs": kv_fit,
            "max_num_seqs": config.max_num_seqs, "max_num_batched_tokens": config.max_num_batched_tokens,
            "job_time_s": m["duration"], "request_throughput": m["request_throughput"],
            "output_throughput": m["output_throughput"], "num_preemptions": m["num_preemptions"],
            "failed": m["failed"], "llm": llm,
            "candidates": [{"why": w, "max_num_seqs": c.max_num_seqs,
                            "max_num_batched_tokens": c.max_num_batched_tokens,
                            "job_time_s": s.metrics["duration"],
                            "output_throughput": s.metrics["output_throughput"],
                            "mean_running": s.metrics["mean_running"],
                            "num_preemptions": s.metrics["num_preemptions"]} for w, c, s in runs],
        })
        return EXIT_OK
    print(results.setup_text(sc, d, cfg, swept="offline"))
    print()
    print(results.offline_table(runs, best))
    print()
    fits = (f"about {kv_fit} of these requests at their peak ({per_request:.0f} blocks each): "
            "the largest batch that never preempts" if kv_fit < n else
            f"all {n} of these requests at their peak ({per_request:.0f} blocks each)" if n > 1 else
            f"the request at its peak ({per_request:.0f} blocks)")
    print(textwrap.fill(f"The KV cache ({d.usable_blocks:,} blocks) holds {fits}.", width=100))
    print(textwrap.fill(
        f"Job time for {n:,} request{'' if n == 1 else 's'}: {results.duration_text(m['duration'])} at {m['output_throughput']:,.0f} "
        f"output tok/s ({m['request_throughput']:.2f} req/s), with {results.seats_words(config.max_num_seqs)}.",
        width=100))
    print()
    print("vLLM offline (from vllm import LLM):")
    print("  " + llm)
    return EXIT_OK
