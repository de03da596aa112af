"""`batchtui search`: the cheapest deployment that meets an SLO over a grid of GPUs,
tensor-parallel sizes and dials. Every point is screened with plan's search on short runs of one
seed; the cheapest and the Pareto front are then searched and confirmed as `batchtui plan` does.
Results are appended to a JSON Lines file as they finish, so an interrupted search resumes where
it stopped. The pure parts (grid, stages, cost, front) are `sim.search`; the executors
(a process pool, or Ray) `batchtui.cli.executors`.

Exit codes: 0 done; 1 no point meets the SLO, or a worker process died or could not start; 2 a
mistake in the command; 130 interrupted, 143 terminated (what finished is kept in each case)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from dataclasses import replace

from sim import planning, rate_plan
from sim import search as s

from . import args as a
from . import options as o
from . import results, vllm_lines
from .lengths import lengths_text, planned_lengths
from .executors import EXECUTORS, make_executor
from .journal import Journal, read_journal
from .exits import EXIT_FAILURE, EXIT_OK, UserError, WorkerError, stopped_how
from .output import Sink, output_file
from .runner import default_jobs, show_progress_default
from .search_stages import Progress, confirm_stage, offline_task, router_stage, run_stage, screen_stage
from .setup import Setup, build_setup, flag_message, user_errors

DEFAULT_OUTPUT = "batchtui-search.jsonl"
SHOWN_ROWS = 15
SHOWN_FRONT = 10
BEST_STAGE_WORDS = {"confirm": "confirmed as plan does",
                    "router": "confirmed, and its replicas checked behind a router, as plan does",
                    "offline": "the whole job simulated"}


def _list(dial: str):
    """An argparse type: a comma-separated list of a dial's values, each read as its flag reads it."""
    flag = next(f for f in o.engine_flags() if f.dial == dial)

    def convert(text: str) -> list:
        items = [t for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError("expected a comma-separated list")
        return list(dict.fromkeys(flag.value(t) for t in items))
    convert.__name__ = dial
    return convert


def _gpus(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list of GPU names")
    return list(dict.fromkeys(items))


def _price(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=USD_PER_HOUR, got {text!r}")
    return name.strip(), o.positive_float(value)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def _prefix(text: str) -> list[bool]:
    choices = {"on": [True], "off": [False], "both": [True, False]}
    if text not in choices:
        raise argparse.ArgumentTypeError(f"expected on, off or both, got {text!r}")
    return choices[text]


def _spec(text: str) -> str:
    """One entry of --speculative-configs: none, or vLLM's --speculative-config JSON (checked)."""
    if text.strip().lower() == "none":
        return ""
    from sim.errors import SimError

    try:
        return s.spec_text(text)
    except SimError as exc:
        raise argparse.ArgumentTypeError(flag_message(exc).removeprefix(o.flagged("{speculative_config} = "))) from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Search a grid of deployments (GPUs x tensor-parallel sizes x expert parallelism x max-num-seqs x "
        "max-num-batched-tokens x KV cache dtypes x prefix caching x speculative configs) for the cheapest that meets a latency SLO (or, with --offline N, "
        "the cheapest batch job). First a screen: every point gets plan's search on one seed with short runs "
        f"({s.SCREEN_PROMPTS} requests, windows of {s.SCREEN_WINDOW} requests and {s.SCREEN_WINDOW_S:g} s, "
        f"to {s.SCREEN_PRECISION:.0%} of the saturated rate); then the --confirm cheapest and as many points "
        "spread along the Pareto front of tokens/s per GPU against tokens/s per user are searched and confirmed as `batchtui plan` does (its "
        "seeds, run lengths and confirmation), and with --peak-rate the --best cheapest have their replicas "
        "checked behind a router as plan checks them. Each point: the highest rate meeting the SLO, the replicas "
        "for --peak-rate, GPUs, cost per hour and per million output tokens, and the vllm serve line of the best "
        "(with --offline, vLLM's LLM(...) call, with the LLM class's defaults). "
        "A deployment that cannot run is listed with the reason. Results are appended to --output as they "
        "finish; rerunning the same command skips the points already done (Ctrl-C keeps them). Every point "
        "runs on the same seeds, so results are the same whatever the executor and the number of workers. "
        "Exit status 1 when no point meets the SLO (or a worker process could not start or died), 2 for a "
        "mistake in the command, 130 when interrupted, 143 when terminated (SIGTERM), 129 when hung up (SIGHUP)."
    ).replace("%", "%%")
    g = p.add_argument_group("the grid (a list not given takes the single value of the setup flags)")
    g.add_argument("--gpus", type=_gpus, metavar="LIST", help="GPUs, comma-separated (profile ids or names)")
    g.add_argument("--tensor-parallel-sizes", type=_list("tensor_parallel_size"), metavar="LIST",
                   help="tensor-parallel sizes, such as 1,2")
    g.add_argument("--expert-parallel", type=_prefix, metavar="on|off|both",
                   help=o.flagged("a mixture of experts' experts placed whole on the GPUs ({enable_expert_parallel}): "
                                  "on, off or both (points of several GPUs; the table marks them 'ep')"))
    g.add_argument("--max-num-seqs-values", type=_list("max_num_seqs"), metavar="LIST",
                   help=o.flagged("max-num-seqs values, such as 16,32,64 (not given: {engine.max_num_seqs}, else "
                                  "each GPU's own vLLM default, the LLM class's with --offline)"))
    g.add_argument("--max-num-batched-tokens-values", type=_list("max_num_batched_tokens"), metavar="LIST",
                   help=o.flagged("max-num-batched-tokens values, such as 2048,8192 (not given: "
                                  "{engine.max_num_batched_tokens}, else each GPU's own vLLM default, the LLM "
                                  "class's with --offline: 16384 on an H100 where vllm serve takes 8192)"))
    g.add_argument("--kv-cache-dtypes", type=_list("kv_cache_dtype"), metavar="LIST", help="KV cache dtypes, such as auto,fp8")
    g.add_argument("--prefix-caching", type=_prefix, metavar="on|off|both", help="prefix caching on, off or both")
    g.add_argument("--speculative-configs", type=_spec, nargs="+", metavar="CONFIG",
                   help=o.flagged("speculative decoding's configs, each none (no drafts) or vLLM's {speculative_config} "
                                  "JSON as one word, such as none '{\"method\": \"eagle3\", \"model\": "
                                  "\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 3}' (the "
                                  "table's spec column: method and K)"))
    g.add_argument("--gpu-price", type=_price, action="append", default=[], metavar="NAME=USD",
                   help="a GPU's price per GPU-hour (overrides its profile's price_per_hour; repeatable)")
    v = a.add_slo_args(p)
    v.add_argument("--confirm", type=_count, default=s.CONFIRM_BEST, metavar="N",
                   help=f"the cheapest screened points confirmed, and as many spread along the screened Pareto front "
                        f"(default {s.CONFIRM_BEST})")
    v.add_argument("--confirm-prompts", type=o.prompt_count, metavar="N",
                   help=f"requests a confirmation run holds (default {rate_plan.PLAN_CONFIRM_PROMPTS:,}, as plan)")
    a.add_setup_args(p)
    a.add_traffic_args(p, rate_flag=False,
                       count_help=f"requests a confirmation's point starts from (default {rate_plan.PLAN_NUM_PROMPTS}, "
                                  "as plan)")
    r = p.add_argument_group("running")
    r.add_argument("--output", metavar="FILE", default=DEFAULT_OUTPUT,
                   help=f"JSON Lines file each result is appended to as it finishes (default {DEFAULT_OUTPUT}); "
                        "rerunning the same search skips what it holds. The final table goes, whole, to the "
                        "same name ending in .json")
    r.add_argument("--resume", metavar="FILE", action="append", default=[],
                   help="reuse the results in this JSON Lines file too (repeatable)")
    r.add_argument("--executor", choices=tuple(EXECUTORS), default="process",
                   help="where points run: process (a pool of --jobs processes, the default) or ray (Ray "
                        "tasks; RAY_ADDRESS picks a cluster, else a local Ray of --jobs CPUs; pip install "
                        "\"batchtui[ray]\")")
    r.add_argument("--best", type=o.positive_int, default=3, metavar="N", help="vllm serve lines shown (default 3)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    a.add_jobs_arg(p)
    p.set_defaults(func=run)


# -- the journal -------------------------------------------------------------------------------------

def table_path(output: str) -> str:
    root, ext = os.path.splitext(output)
    return (root if ext == ".jsonl" else output) + ".json"


# -- the command -----------------------------------------------------------------------------------------

def _grid_values(args, setup: Setup) -> dict:
    sc, cfg = setup.scenario, setup.config
    profiles = setup.profiles
    gpus = [o.resolve_gpu(g, profiles) for g in args.gpus] if args.gpus else [sc.gpu]
    for g in gpus:
        if g not in profiles.gpus:
            raise UserError(f"argument --gpus: {profiles.unknown_gpu(g)}")
    return {"gpus": gpus,
            "tensor_parallel_sizes": args.tensor_parallel_sizes or [sc.tensor_parallel_size],
            "kv_cache_dtypes": args.kv_cache_dtypes or [sc.kv_cache_dtype],
            "prefix_caching": args.prefix_caching or [cfg.enable_prefix_caching],
            "expert_parallel": args.expert_parallel or [bool(sc.enable_expert_parallel)],
            "speculative_configs": list(dict.fromkeys(args.speculative_configs or [s.spec_text(sc.speculative_config)]))}


def _check_args(args) -> None:
    from . import flag_table as t

    given = {row.dial or row.flag for row in t.rows() if row.given(args) is not None}
    clash = [(list_flag, one) for list_flag, one in (
        ("--gpus", "gpu"), ("--tensor-parallel-sizes", "tensor_parallel_size"),
        ("--max-num-seqs-values", "engine.max_num_seqs"),
        ("--max-num-batched-tokens-values", "engine.max_num_batched_tokens"), ("--kv-cache-dtypes", "kv_cache_dtype"),
        ("--prefix-caching", "engine.enable_prefix_caching"), ("--expert-parallel", "enable_expert_parallel"),
        ("--speculative-configs", "speculative_config"),
        *(("--speculative-configs", flag) for flag, *_ in a.SPEC_SHORTHANDS),
    ) if getattr(args, t.dest(list_flag)) is not None and one in given]
    if clash:
        list_flag, one = clash[0]
        one = one if one.startswith("-") else o.flagged("{" + one + "}")  # a dial, or a shorthand's own flag
        raise UserError(f"argument {list_flag}: not allowed with {one} (give the value in the list)")
    a.check_slo_args(args, "search")


def prices(args, profiles) -> dict[str, float | None]:
    out = {gid: g.price_per_hour for gid, g in profiles.gpus.items()}
    for name, usd in args.gpu_price:
        gid = o.resolve_gpu(name, profiles)
        if gid not in profiles.gpus:
            raise UserError(f"argument --gpu-price: unknown GPU {name!r}")
        out[gid] = usd
    return out


@user_errors
def run(args: argparse.Namespace) -> int:
    _check_args(args)
    # Not deployed: every point is deployed on its own GPU and TP size (one that cannot run is
    # listed as such); the default H100 at TP 1 refused Llama 3.1 70B on --tensor-parallel-sizes 2,4.
    setup = build_setup(args, rate_flag=False, deployed=False)  # (--offline: vLLM's LLM class's defaults)
    slo = None if args.offline is not None else planning.Slo(args.ttft_p99, args.tpot_p99)
    n = args.num_prompts or rate_plan.PLAN_NUM_PROMPTS
    from sim.curves import at_rate

    base = setup.scenario if args.offline is not None else at_rate(setup.scenario, setup.scenario.workload.request_rate, n)
    values = _grid_values(args, setup)
    points = [point for gpu in values["gpus"] for point in s.grid(
        [gpu], values["tensor_parallel_sizes"],
        *s.grid_dials(setup.scenario, setup.profiles, gpu, args.max_num_seqs_values, args.max_num_batched_tokens_values),
        values["kv_cache_dtypes"], values["prefix_caching"], values["expert_parallel"], values["speculative_configs"])]
    price = prices(args, setup.profiles)
    confirm_settings = {"seeds": args.seeds, "num_prompts": n, "min_window": rate_plan.PLAN_MIN_WINDOW,
                        "min_window_s": rate_plan.PLAN_MIN_WINDOW_S,
                        "confirm_prompts": args.confirm_prompts or rate_plan.PLAN_CONFIRM_PROMPTS,
                        "new_seeds": rate_plan.PLAN_CONFIRM_NEW_SEEDS}
    screen_settings = {"prompts": s.SCREEN_PROMPTS, "window": s.SCREEN_WINDOW, "window_s": s.SCREEN_WINDOW_S,
                       "precision": s.SCREEN_PRECISION}
    # The grid's own dials are the point's; the rest of the scenario is the context.
    context = s.context_key(replace(base, gpu="", tensor_parallel_size=1, kv_cache_dtype="auto",
                                    enable_expert_parallel=None, speculative_config=None,
                                    engine={k: v for k, v in base.engine.items()
                                            if k not in ("max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching")}),
                            slo, args.offline, {"screen": screen_settings, "confirm": confirm_settings})
    journal = Journal.open(args.output)  # a file that is no journal is refused here, untouched
    done: dict[str, s.PointResult] = {}
    for path in args.resume:
        if not os.path.lexists(path):
            raise UserError(f"argument --resume: {path} does not exist")
        done.update(read_journal(path, "--resume").done)
    done.update(journal.read.done)
    reused = {"screen": 0, "confirm": 0, "router": 0}
    jobs = args.jobs or default_jobs()
    progress = Progress(show_progress_default(args.json))
    counts = {"screen": 0, "confirm": 0, "router": 0, "proved": 0}
    started = time.monotonic()
    try:
        with make_executor(args.executor, jobs) as executor:
            if args.offline is not None:
                keys = [s.point_key(p, context, "offline") for p in points]
                reused["screen"] = sum(k in done for k in keys)
                counts["screen"] = run_stage(executor, offline_task, [(base, p, args.offline) for p in points], keys,
                                             done, journal, progress, "offline jobs")
                screened = [done[k] for k in keys]
                confirmed = {}
            else:
                keys = [s.point_key(p, context, "screen") for p in points]
                reused["screen"] = sum(k in done for k in keys)
                counts["screen"], counts["proved"] = screen_stage(executor, base, slo, screen_settings, points, keys,
                                                                 done, journal, progress)
                screened = [done[k] for k in keys]
                costs = {r.point: s.cost(r, price[r.point.gpu], args.peak_rate, args.headroom)
                         for r in screened if r.feasible}
                keep = s.survivors(screened, costs, args.confirm)
                ckeys = [s.point_key(r.point, context, "confirm") for r in keep]
                reused["confirm"] = sum(k in done for k in ckeys)
                # (every point confirmed is checked behind a router when they are --best or fewer:
                # each then straight after its confirmation)
                router = None if args.peak_rate is None or len(keep) > args.best else (args, context)
                counts["confirm"], checked = confirm_stage(executor, base, slo, n, confirm_settings, keep, ckeys,
                                                           done, journal, progress, router)
                confirmed = {r.point: done[k] for r, k in zip(keep, ckeys)}
                if args.peak_rate is not None:
                    counts["router"], reused["router"] = router_stage(
                        executor, args, base, slo, confirmed, price, context, done, journal, progress, checked)
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the executor has ended the workers
        progress.stop()
        word, status = stopped_how(exc)
        print(f"{word}: the points finished are kept in {args.output}; run the same command again to resume",
              file=sys.stderr)
        return status
    except WorkerError as exc:  # one line, exit 1 (`main`), saying what is kept
        raise WorkerError(f"{exc}; the points finished are kept in {args.output}: run the same command again "
                          "to resume") from None
    finally:
        progress.stop()
        journal.close()
    elapsed = time.monotonic() - started
    report = build_report(args, setup, base, slo, points, screened, confirmed, price, counts, reused, elapsed, jobs)
    with output_file(table_path(args.output), "--output") as sink:
        results.dump_json(sink, report)
    if args.json:
        results.dump_json(Sink(sys.stdout, "standard output"), report)
    else:
        print_report(report, args)
    return EXIT_OK if report["best"] else EXIT_FAILURE


# -- the answer ------------------------------------------------------------------------------------------

def final_results(screened, confirmed) -> list[s.PointResult]:
    """Each point's last word: its confirmation if it had one, else its screen."""
    return [confirmed.get(r.point, r) for r in screened]


def row(r: s.PointResult, c: s.Cost | None, front: set) -> dict:
    d = {**{k: v for k, v in r.to_json().items() if k not in ("point",)}, **r.to_json()["point"]}
    d.pop("runnable", None)
    d["tokens_per_gpu"] = r.tokens_per_gpu
    d["tokens_per_user"] = r.tokens_per_user
    d["on_front"] = r.point in front
    d["spec"] = r.point.spec
    if c is not None:
        d.update(replicas=c.replicas, gpus=c.gpus, cost_per_hour=c.per_hour,
                 cost_per_million_tokens=c.per_million_tokens)
    return d


def build_report(args, setup, base, slo, points, screened, confirmed, price, counts, reused, elapsed, jobs) -> dict:
    final = final_results(screened, confirmed)
    ok = [r for r in final if r.feasible]
    headroom = 0.0 if args.offline is not None else args.headroom
    costs = {r.point: s.cost(r, price[r.point.gpu], args.peak_rate, headroom) for r in ok}
    ranked = sorted(ok, key=lambda r: ((0 if r.stage in ("router", "confirm", "offline") else 1),)
                    + s.rank_key(r, costs[r.point]))
    front = s.pareto_front(ok)
    front_set = {r.point for r in front}
    best = []
    for r in ranked[:args.best]:  # confirmed ones first; screened ones only when fewer were confirmed
        point = Setup(s.point_scenario(base, r.point), setup.profiles)
        # (an offline job runs in vLLM's LLM class, as plan --offline prints it; a server, vllm serve)
        best.append({**row(r, costs[r.point], front_set),
                     **({"llm": vllm_lines.llm_call(point, point.config)} if args.offline is not None else
                        {"vllm_command": vllm_lines.serve_command(point)})})
    return {
        "model": setup.scenario.model,
        "lengths": planned_lengths(base, args.offline or base.workload.num_prompts),
        "slo": None if slo is None else {"p99_ttft_ms": slo.ttft_p99_ms, "p99_tpot_ms": slo.tpot_p99_ms},
        "offline": args.offline, "peak_rate": args.peak_rate, "headroom": headroom,
        "points": len(points),
        "stages": {"screen": {"points": len(screened), "ran": counts["screen"], "reused": reused["screen"],
                              "proved": counts["proved"]},
                   "confirm": {"points": len(confirmed), "ran": counts["confirm"], "reused": reused["confirm"]},
                   "router": {"points": sum(r.stage == "router" for r in confirmed.values()), "ran": counts["router"],
                              "reused": reused["router"]}},
        "cannot_run": sum(not r.runnable for r in screened),
        "meet_slo": len(ok),
        "elapsed_s": elapsed, "jobs": jobs, "executor": args.executor,
        "unpriced_gpus": sorted({r.point.gpu for r in ok if price[r.point.gpu] is None}),
        "ranked": [row(r, costs[r.point], front_set) for r in ranked],
        "front": [row(r, costs[r.point], front_set) for r in front],
        "infeasible": [row(r, None, front_set) for r in final if not r.feasible],
        "best": best,
    }


def _money(v) -> str:
    return "no price" if v is None else f"${v:,.2f}"


def _where(d: dict) -> str:
    """A row's GPU and parallelism in words: "h100-sxm tp8 ep" (a row, not a `GridPoint`: read back
    from the table)."""
    return f"{d['gpu']} tp{d['tensor_parallel_size']}{' ep' if d['enable_expert_parallel'] else ''}"


def _fill(text: str) -> str:
    return textwrap.fill(text, width=100)


def print_report(rep: dict, args) -> None:
    st = rep["stages"]
    if rep["slo"] is not None:
        slo = planning.Slo(rep["slo"]["p99_ttft_ms"], rep["slo"]["p99_tpot_ms"])
        print(f"Search for {rep['model']}: SLO {slo.text()}" +
              (f", peak {rep['peak_rate']:g} req/s with {rep['headroom']:.0%} headroom." if rep["peak_rate"] else "."))
    else:
        print(f"Search for {rep['model']}: the cheapest batch job of {rep['offline']:,} requests.")
    print(_fill(lengths_text(rep["lengths"])))
    print(_fill(
        f"{rep['points']} point{'' if rep['points'] == 1 else 's'}: {rep['cannot_run']} cannot run; screened {st['screen']['points']} "
        f"({st['screen']['ran']} ran now"
        + (f", {st['screen']['proved']} of them by the runs of a like point, which never reached the seats or "
           "token budget they differ in" if st["screen"].get("proved") else "")
        + f", {st['screen']['reused']} from earlier runs)"
        + ("" if rep["slo"] is None else
           f"; {st['confirm']['points']} confirmed as plan does ({st['confirm']['ran']} ran now, "
           f"{st['confirm']['reused']} from earlier runs)")
        + ("" if not st["router"]["points"] else
           f"; the replicas of {st['router']['points']} checked behind a router as plan does "
           f"({st['router']['ran']} ran now, {st['router']['reused']} from earlier runs)")
        + (f"; {rep['meet_slo']} meet the SLO." if rep["slo"] is not None else f"; {rep['meet_slo']} finished the job.")
        + f" {rep['elapsed_s']:.0f} s with {rep['jobs']} "
        f"{'job' if rep['jobs'] == 1 else 'jobs'} ({rep['executor']})."))
    if rep["unpriced_gpus"]:
        print(_fill(f"No price for {', '.join(rep['unpriced_gpus'])}: give --gpu-price NAME=USD_PER_HOUR "
                    "(those points rank after priced ones)."))
    print()
    rows = rep["ranked"][:SHOWN_ROWS]
    # (a spec column only when the grid searched speculative decoding)
    spec = any(d["speculative_config"] for d in rep["ranked"] + rep["infeasible"])
    if rows:
        # (a batch job: its time where a service has its replicas, one replica each)
        job = rep["slo"] is None
        print(f"Cheapest first ({len(rows)} of {len(rep['ranked'])}; * on the Pareto front):")
        print(f"  {'gpu':<10} {'tp':>4} {'seqs':>5} {'tokens':>6} {'kv':<5} {'cache':<5} "
              + (f"{'spec':<10} " if spec else "") + f"{'stage':<8} "
              f"{'req/s':>7} " + (f"{'job time':>11}" if job else f"{'repl':>4}") + f" {'GPUs':>4} {'$/hour':>9} "
              f"{'$/Mtok':>8} {'tok/s/GPU':>9} {'tok/s/user':>10}")
        for d in rows:
            tp = f"{d['tensor_parallel_size']}{'ep' if d['enable_expert_parallel'] else ''}"
            size = f"{results.duration_text(d['job_s']):>11}" if job else f"{d['replicas']:>4}"
            print(f"{'*' if d['on_front'] else ' '} {d['gpu']:<10} {tp:>4} {d['max_num_seqs']:>5} "
                  f"{d['max_num_batched_tokens']:>6} {d['kv_cache_dtype']:<5} {'on' if d['enable_prefix_caching'] else 'off':<5} "
                  + (f"{d['spec']:<10} " if spec else "") + f"{d['stage']:<8} {d['rate']:>7.2f} {size} {d['gpus']:>4} "
                  f"{_money(d['cost_per_hour']):>9} {_money(d['cost_per_million_tokens']):>8} "
                  f"{d['tokens_per_gpu']:>9,.0f} {d['tokens_per_user']:>10,.1f}")
        print()
        front = rep["front"]
        shown = s.spread(front, SHOWN_FRONT)
        print("Pareto front (tokens/s per GPU against tokens/s per user)"
              + (f", {len(shown)} of its {len(front)} points spread along it:" if len(shown) < len(front) else ":"))
        for d in shown:
            print(f"  {_where(d)} seqs {d['max_num_seqs']} tokens "
                  f"{d['max_num_batched_tokens']} kv {d['kv_cache_dtype']}" + (f" spec {d['spec']}" if spec else "")
                  + f": {d['tokens_per_gpu']:,.0f} tok/s per GPU, "
                  f"{d['tokens_per_user']:,.1f} tok/s per user ({d['stage']})")
    bad = rep["infeasible"]
    if bad:
        print()
        groups: dict[str, list] = {}
        for d in bad:
            groups.setdefault(d["reason"].split(":")[0] if d["reason"].startswith("no rate") else d["reason"], []).append(d)
        print(f"Infeasible ({len(bad)} point{'' if len(bad) == 1 else 's'}):")
        for reason, ds in groups.items():
            where = sorted({_where(d)
                            + (f" spec {d['spec']}" if spec else "") for d in ds})
            print(textwrap.fill(f"  {len(ds)} on {', '.join(where)}: {reason}", width=100, subsequent_indent="    "))
    if rep["best"]:
        print()
        print("vLLM offline (from vllm import LLM) for the best deployments:" if rep["slo"] is None else
              "vLLM command for each replica of the best deployments:")
        for d in rep["best"]:
            print(f"  {d['replicas']} x {_where(d)}" + (f" spec {d['spec']}" if spec else "")
                  + (", no price " if d["cost_per_hour"] is None else f", {_money(d['cost_per_hour'])} an hour ")
                  + f"({BEST_STAGE_WORDS.get(d['stage'], d['stage'] + ' only')}):")
            print("    " + d.get("llm", d.get("vllm_command")))
    else:
        print()
        print("No point meets the SLO." if rep["slo"] is not None else "No job ran.")
    print()
    print(f"Results: {args.output} (one line a point), {table_path(args.output)} (this table).")
