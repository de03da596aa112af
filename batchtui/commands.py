"""The headless subcommands: `sim` (one run), `sweep` (a curve), `plan` (capacity for an SLO),
`steps` (the lessons and the learner's marks).

Engine flags are spelled as `vllm serve` spells them and default, when left out, to vLLM 0.33's
defaults for the chosen GPU (`Scenario.engine_config` fills in only what the user did not set).
Traffic flags follow `vllm bench serve` where it has one. `--scenario FILE` starts from a saved
scenario; flags given on the command line override it.

Exit codes: 0 done; 2 a mistake in what was asked (bad flag, bad file, a config vLLM refuses);
1 a failure — and for `plan`, like grep, 1 also means "no rate meets this SLO" (the answer is
still printed, with the closest point).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

from batchtui import report
from batchtui.asciichart import scatter
from batchtui.planning import (KNEE_LATENCY_FACTOR, PLAN_FRACTIONS, PLAN_NUM_PROMPTS, Slo, find_knee,
                               mean_peak_blocks, plan_rate, replicas_needed)
from batchtui.runner import Runner
from sim.errors import ConfigError
from sim.profiles import BUILTIN_PROFILES, KV_CACHE_DTYPE_BYTES, MAX_BLOCK_SIZE, TENSOR_PARALLEL_SIZES

EXIT_OK = 0
EXIT_FAILURE = 1  # also: plan found no rate that meets the SLO
EXIT_USER_ERROR = 2

# (argparse dest, the dial name sim's errors use, the flag) for every flag that sets a dial.
DIAL_FLAGS = (
    ("gpu", "gpu", "--gpu"),
    ("model", "model", "--model"),
    ("tensor_parallel_size", "tensor_parallel_size", "--tensor-parallel-size"),
    ("kv_cache_dtype", "kv_cache_dtype", "--kv-cache-dtype"),
    ("gpu_memory_utilization", "gpu_memory_utilization", "--gpu-memory-utilization"),
    ("block_size", "block_size", "--block-size"),
    ("num_gpu_blocks_override", "num_gpu_blocks_override", "--num-gpu-blocks-override"),
    ("batching", "batching", "--batching"),
    ("max_num_seqs", "max_num_seqs", "--max-num-seqs"),
    ("max_num_batched_tokens", "max_num_batched_tokens", "--max-num-batched-tokens"),
    ("enable_chunked_prefill", "enable_chunked_prefill", "--enable-chunked-prefill"),
    ("long_prefill_token_threshold", "long_prefill_token_threshold", "--long-prefill-token-threshold"),
    ("scheduling_policy", "scheduling_policy", "--scheduling-policy"),
    ("max_model_len", "max_model_len", "--max-model-len"),
    ("max_batch_size", "max_batch_size", "--max-batch-size"),
    ("max_queue_delay_ms", "max_queue_delay", "--max-queue-delay-ms"),
    ("request_rate", "request_rate", "--request-rate"),
    ("num_prompts", "num_prompts", "--num-prompts"),
    ("input_len", "input_len", "--input-len"),
    ("input_dist", "input_dist", "--input-dist"),
    ("input_len_min", "input_len_low", "--input-len-min"),
    ("input_len_max", "input_len_high", "--input-len-max"),
    ("input_sigma", "input_len_sigma", "--input-sigma"),
    ("output_len", "output_len", "--output-len"),
    ("output_dist", "output_dist", "--output-dist"),
    ("output_len_min", "output_len_low", "--output-len-min"),
    ("output_len_max", "output_len_high", "--output-len-max"),
    ("output_sigma", "output_len_sigma", "--output-sigma"),
    ("burst_size", "burst_size", "--burst-size"),
    ("workload", "workload", "--workload"),
)
ENGINE_DIALS = ("batching", "max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill",
                "long_prefill_token_threshold", "scheduling_policy", "max_model_len", "max_batch_size")
DEPLOYMENT_DIALS = ("gpu", "model", "tensor_parallel_size", "kv_cache_dtype", "gpu_memory_utilization",
                    "block_size", "num_gpu_blocks_override", "seed")


def _user_error(message: str) -> Exception:
    from batchtui.cli import UserError
    return UserError(message)


# -- argument types: each message names the allowed range; argparse adds the flag -------------------

def _whole(text: str, low: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    return _whole(text, 1, "a whole number >= 1")


def non_negative_int(text: str) -> int:
    """A whole number >= 0."""
    return _whole(text, 0, "a whole number >= 0")


def block_count(text: str) -> int:
    """num_gpu_blocks_override: at least 2 (one block is reserved)."""
    return _whole(text, 2, "a whole number of blocks >= 2 (one is reserved)")


def _float(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def fraction(text: str) -> float:
    """A fraction in (0, 1]."""
    value = _float(text, "a fraction in (0, 1]")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _float(text, "a number > 0")
    if not (0 < value < math.inf):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    value = _float(text, "a number >= 0")
    if not (0 <= value < math.inf):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def rate(text: str) -> float:
    """Requests/s > 0, or `inf` (every request queued at once)."""
    what = "requests/s > 0, or inf (all at once)"
    value = _float(text, what)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def percent(text: str) -> float:
    """A percentage, `30` or `30%`, returned as a fraction (0.30); 0 to 1000 %."""
    body = text.strip().rstrip("%")
    value = _float(body, "a percentage from 0 to 1000, such as 30 or 30%")
    if not 0 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to 1000, got {text!r}")
    return value / 100


def block_size(text: str) -> int:
    value = _whole(text, 1, f"a power of two from 1 to {MAX_BLOCK_SIZE}")
    if value > MAX_BLOCK_SIZE or value & (value - 1):
        raise argparse.ArgumentTypeError(f"expected a power of two from 1 to {MAX_BLOCK_SIZE}, got {text!r}")
    return value


def _comma_list(item):
    def parse(text: str) -> list:
        parts = [p.strip() for p in text.split(",")]
        if not text.strip() or any(not p for p in parts):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list such as 1,2,4, got {text!r}")
        values = [item(p) for p in parts]  # each item raises with its own range
        return sorted(set(values))
    return parse


rate_list = _comma_list(rate)
positive_int_list = _comma_list(positive_int)


# -- parsers ---------------------------------------------------------------------------------------

def _add_setup_args(p: argparse.ArgumentParser) -> None:
    gpus = ", ".join(BUILTIN_PROFILES.gpus)
    models = ", ".join(BUILTIN_PROFILES.models)
    g = p.add_argument_group("hardware and model")
    g.add_argument("--scenario", metavar="FILE",
                   help="start from a scenario TOML file; flags given here override it")
    g.add_argument("--profiles", metavar="FILE",
                   help="a TOML file of extra or overriding GPU and model profiles")
    g.add_argument("--gpu", metavar="ID", help=f"GPU profile: {gpus} (default h100-sxm)")
    g.add_argument("--model", metavar="ID", help=f"model profile: {models} (default llama-3.1-8b)")
    g.add_argument("--tensor-parallel-size", type=int, choices=TENSOR_PARALLEL_SIZES, metavar="N",
                   help="GPUs the model is split over: 1, 2, 4 or 8 (default 1)")
    g.add_argument("--kv-cache-dtype", choices=tuple(KV_CACHE_DTYPE_BYTES), metavar="DTYPE",
                   help=f"KV cache element type: {', '.join(KV_CACHE_DTYPE_BYTES)} (default auto = bf16)")
    g.add_argument("--gpu-memory-utilization", type=fraction, metavar="F",
                   help="share of GPU memory vLLM may use, in (0, 1] (default 0.92)")
    g.add_argument("--block-size", type=block_size, metavar="N",
                   help="tokens per KV cache block, a power of two (default 16)")
    g.add_argument("--num-gpu-blocks-override", type=block_count, metavar="N",
                   help="set the number of KV cache blocks instead of sizing it from memory")

    e = p.add_argument_group("engine (vLLM dials; unset = vLLM 0.33's default for the GPU)")
    e.add_argument("--batching", choices=("sequential", "static", "dynamic", "continuous"),
                   help="batching policy (default continuous, as vLLM; dynamic for an encoder)")
    e.add_argument("--max-num-seqs", type=positive_int, metavar="N",
                   help="most requests running at once (H100/H200/B200 1024, A100/L40S 256)")
    e.add_argument("--max-num-batched-tokens", type=positive_int, metavar="N",
                   help="token budget per iteration (serve: H100/H200 8192, B200 16384, A100/L40S 2048)")
    e.add_argument("--enable-chunked-prefill", action=argparse.BooleanOptionalAction, default=None,
                   help="split long prompts over iterations (default on)")
    e.add_argument("--long-prefill-token-threshold", type=non_negative_int, metavar="N",
                   help="cap on one request's prefill chunk per iteration; 0 = off (default 0)")
    e.add_argument("--scheduling-policy", choices=("fcfs", "priority"),
                   help="order of admission and preemption (default fcfs)")
    e.add_argument("--max-model-len", type=positive_int, metavar="N",
                   help="longest prompt + output (default: the model's context length)")
    e.add_argument("--max-batch-size", type=positive_int, metavar="N",
                   help="batch size for static and dynamic batching (default 64)")
    e.add_argument("--max-queue-delay-ms", type=non_negative_float, metavar="MS",
                   help="dynamic batching: longest wait for a batch to fill (default 10)")


def _add_traffic_args(p: argparse.ArgumentParser, rate_flag: bool = True,
                      title: str = "traffic (default: 1000 requests, Poisson at 4 req/s, 512 in / 256 out)") -> None:
    t = p.add_argument_group(title)
    if rate_flag:
        t.add_argument("--request-rate", type=rate, metavar="R",
                       help="requests/s, or inf to queue every request at once")
    t.add_argument("--num-prompts", type=positive_int, metavar="N", help="requests in the run")
    t.add_argument("--arrival", choices=("poisson", "constant", "bursts"),
                   help="how arrivals are spaced at the request rate (default poisson)")
    t.add_argument("--burst-size", type=positive_int, metavar="N",
                   help="requests per burst with --arrival bursts (default 16)")
    for side, default in (("input", 512), ("output", 256)):
        t.add_argument(f"--{side}-len", type=positive_int, metavar="N",
                       help=f"{side} tokens: the fixed length, or the mean (uniform) or median "
                            f"(lognormal) (default {default})")
        t.add_argument(f"--{side}-dist", choices=("fixed", "uniform", "lognormal"),
                       help=f"distribution of {side} lengths (default fixed)")
        t.add_argument(f"--{side}-len-min", type=positive_int, metavar="N",
                       help=f"shortest {side} (uniform low bound; lognormal clip)")
        t.add_argument(f"--{side}-len-max", type=positive_int, metavar="N",
                       help=f"longest {side} (uniform high bound; lognormal clip)")
        t.add_argument(f"--{side}-sigma", type=non_negative_float, metavar="S",
                       help=f"lognormal shape of {side} lengths (default 0.5)")
    t.add_argument("--workload", metavar="FILE",
                   help='a JSON Lines trace instead of generated traffic: one request a line, '
                        '{"arrival_time": s, "prompt_len": n, "output_len": n}')
    t.add_argument("--seed", type=non_negative_int, metavar="N", help="random seed (default 0)")


def add_subcommands(sub) -> None:
    """Called by batchtui.cli with its subparsers."""
    p = sub.add_parser(
        "sim", help="simulate one serving run and print a vllm bench serve style result",
        description="Simulate one vLLM replica serving a stream of requests and print the result "
                    "as `vllm bench serve` lays it out, then what only the simulator sees.")
    _add_setup_args(p)
    _add_traffic_args(p)
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true",
                   help="print the metrics as JSON, with vllm bench serve's key names")
    o.add_argument("--per-request", metavar="FILE.csv", help="write one CSV row per request")
    p.set_defaults(func=cmd_sim)

    p = sub.add_parser(
        "sweep", help="run the same traffic at several rates (or max-num-seqs values)",
        description="Run the same engine and traffic at several request rates (or values of "
                    "max-num-seqs), tabulate the points and chart throughput against latency "
                    "(TTFT p99 over rates, TPOT p99 over max-num-seqs) with the knee marked. The "
                    "knee is the last point before that latency passes "
                    f"{KNEE_LATENCY_FACTOR:g}x its value at the first point, or before throughput "
                    "stops rising (less than 5 % more than the point before, or, for closely "
                    "spaced points, less than a quarter of the step in the swept value).")
    s = p.add_argument_group("what to sweep (one of)").add_mutually_exclusive_group(required=True)
    s.add_argument("--request-rates", type=rate_list, metavar="R,R,...",
                   help="request rates in req/s, such as 2,4,8,16,32,inf")
    s.add_argument("--max-num-seqs-values", type=positive_int_list, metavar="N,N,...",
                   help="values of --max-num-seqs, such as 16,32,64,128,256")
    _add_setup_args(p)
    _add_traffic_args(p)
    o = p.add_argument_group("output")
    o.add_argument("--knee-factor", type=positive_float, default=KNEE_LATENCY_FACTOR, metavar="K",
                   help=f"latency p99 growth that marks the knee (default {KNEE_LATENCY_FACTOR:g})")
    o.add_argument("--csv", metavar="FILE", help="also write the points to a CSV file")
    o.add_argument("--json", action="store_true", help="print the points as JSON instead")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser(
        "plan", help="the highest rate per replica that meets an SLO, and replicas needed",
        description="Find the highest request rate one replica serves within a latency SLO "
                    "(p99 TTFT and/or p99 TPOT): the saturated rate first (every request queued "
                    "at once), then a coarse sweep at 10 %, 20 %, ... 200 % of it that stops at "
                    "the first miss, then bisection to within 1 % of it. Percentiles come from "
                    "the steady part of each run, and a rate at which the run does not settle "
                    "(latency still climbing) counts as a miss. With --peak-rate, the replicas "
                    "needed; then the vllm serve command. With --offline N, the settings and "
                    "job time for N queued requests instead. Exit status 1 when no rate meets "
                    "the SLO (the closest point is shown), 2 for a mistake in the command.")
    g = p.add_argument_group("service level")
    g.add_argument("--ttft-p99", type=positive_float, metavar="MS", help="p99 time to first token, ms")
    g.add_argument("--tpot-p99", type=positive_float, metavar="MS", help="p99 time per output token, ms")
    g.add_argument("--peak-rate", type=positive_float, metavar="R", help="peak traffic to serve, req/s")
    g.add_argument("--headroom", type=percent, default=0.30, metavar="PCT",
                   help="spare capacity on top of the peak (default 30%%)")
    g.add_argument("--offline", type=positive_int, metavar="N",
                   help="plan a batch job of N requests queued at once instead of an SLO")
    _add_setup_args(p)
    _add_traffic_args(p, rate_flag=False, title=f"traffic (default: {PLAN_NUM_PROMPTS} requests a "
                                              "point, Poisson, 512 in / 256 out)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("steps", help="list the twenty steps with your completion marks",
                       description="List the tutorial's twenty steps, marking those you finished.")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=cmd_steps)


# -- from flags to a scenario ----------------------------------------------------------------------

def _given(args: argparse.Namespace) -> dict[str, str]:
    """Dial name -> flag, for the dials set on this command line."""
    return {dial: flag for dest, dial, flag in DIAL_FLAGS if getattr(args, dest, None) is not None}


def _translate(exc: ConfigError, given: dict[str, str]) -> str:
    """A ConfigError in the words of the command line: the flag, when the user gave it."""
    text = str(exc)
    flag = given.get(exc.dial)
    prefix = f"{exc.dial} = {exc.value!r}"
    if flag and text.startswith(prefix):
        shown = exc.value
        if exc.dial == "max_queue_delay":  # the flag takes ms, the dial seconds
            shown = f"{exc.value * 1000:g}"
        return f"argument {flag}: {shown}" + text[len(prefix):]
    for _, dial, flag in DIAL_FLAGS:
        if dial == exc.dial and exc.dial not in given:
            return text.rstrip(".") + f"; set it with {flag}."
    return text


def user_errors(func):
    """Turn the simulator's ConfigErrors into messages that name the flag."""
    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except ConfigError as exc:
            raise _user_error(_translate(exc, _given(args))) from None
    return wrapper


class Setup:
    """A scenario built from flags, resolved against the profiles: what the engine will run."""

    def __init__(self, scenario, profiles) -> None:
        self.scenario = scenario
        self.profiles = profiles
        self.deployment = scenario.deployment(profiles)
        self.config = scenario.engine_config(profiles)
        scenario.workload.validate()


def build_setup(args: argparse.Namespace) -> Setup:
    from sim.scenario import Scenario

    sc = Scenario.load(args.scenario) if args.scenario else Scenario()
    changes = {k: getattr(args, k) for k in DEPLOYMENT_DIALS if getattr(args, k, None) is not None}
    if args.profiles:
        changes["profiles_path"] = args.profiles
    sc = replace(sc, **changes)
    profiles = sc.profiles()
    model = profiles.model(sc.model)

    engine = {k: getattr(args, k) for k in ENGINE_DIALS if getattr(args, k, None) is not None}
    if args.max_queue_delay_ms is not None:
        engine["max_queue_delay"] = args.max_queue_delay_ms / 1000
    if model.kind == "encoder" and "batching" not in engine and "batching" not in sc.engine:
        engine["batching"] = "dynamic"  # an encoder is served by dynamic batching only
    sc = sc.with_engine(**engine)

    w = sc.workload
    rate_given = getattr(args, "request_rate", None) is not None
    if args.workload:
        clash = [f for f, v in (("--request-rate", rate_given), ("--num-prompts", args.num_prompts),
                                ("--arrival", args.arrival)) if v]
        if clash:
            raise _user_error(f"argument {clash[0]}: not allowed with --workload "
                              "(the trace sets arrivals and the number of requests)")
        w = replace(w, arrival="trace", trace_path=args.workload)
    else:
        if rate_given:
            w = replace(w, request_rate=args.request_rate)
        if args.num_prompts is not None:
            w = replace(w, num_prompts=args.num_prompts)
        if args.arrival is not None:
            w = replace(w, arrival=args.arrival)
        if args.burst_size is not None:
            w = replace(w, burst_size=args.burst_size)
    for side in ("input", "output"):
        spec = getattr(w, side)
        fields = {"dist": getattr(args, f"{side}_dist"), "mean": getattr(args, f"{side}_len"),
                  "low": getattr(args, f"{side}_len_min"), "high": getattr(args, f"{side}_len_max"),
                  "sigma": getattr(args, f"{side}_sigma")}
        if side == "input" and model.kind == "encoder" and fields["mean"] is None and not args.scenario:
            fields["mean"] = model.input_len  # an embedder's requests are its fixed input length
        spec = replace(spec, **{k: v for k, v in fields.items() if v is not None})
        w = replace(w, **{side: spec})
    if w.num_prompts == 0 and w.arrival not in ("trace",):
        raise _user_error("the scenario's traffic is endless (num_prompts = 0); give --num-prompts N")
    sc = replace(sc, workload=w)
    return Setup(sc, profiles)


@contextlib.contextmanager
def _output_file(path: str | None, flag: str):
    """Open `path` for writing before the run, so a bad path fails at once; remove it again if
    the command fails. Yields None when no path was given."""
    if path is None:
        yield None
        return
    try:
        handle = open(path, "w", encoding="utf-8", newline="")
    except OSError as exc:
        raise _user_error(f"argument {flag}: cannot write {path}: {exc.strerror or exc}") from None
    try:
        with handle:
            yield handle
    except BaseException:
        Path(path).unlink(missing_ok=True)
        raise


def _print_json(data) -> None:
    print(json.dumps(report.json_safe(data), indent=2))


# -- sim -------------------------------------------------------------------------------------------

@user_errors
def cmd_sim(args: argparse.Namespace) -> int:
    setup = build_setup(args)
    with _output_file(args.per_request, "--per-request") as csv_file:
        with Runner(profiles=setup.profiles) as runner:
            summary = runner.run(setup.scenario)
        if csv_file is not None:
            report.write_per_request_csv(csv_file, summary.records)
    if args.json:
        _print_json(report.run_json(summary, setup.scenario, setup.config, setup.deployment))
        return EXIT_OK
    print(report.setup_text(setup.scenario, setup.deployment, setup.config))
    print()
    print(report.result_block(summary, setup.config, setup.deployment))
    if args.per_request:
        print(f"Per-request results: {args.per_request} ({len(summary.records)} rows)")
    return EXIT_OK


# -- sweep -----------------------------------------------------------------------------------------

@user_errors
def cmd_sweep(args: argparse.Namespace) -> int:
    by_rate = args.request_rates is not None
    if by_rate and args.request_rate is not None:
        raise _user_error("argument --request-rate: not allowed with --request-rates")
    if not by_rate and args.max_num_seqs is not None:
        raise _user_error("argument --max-num-seqs: not allowed with --max-num-seqs-values")
    if by_rate and args.workload:
        raise _user_error("argument --request-rates: not allowed with --workload (a trace sets its own arrivals)")
    setup = build_setup(args)
    if not by_rate and setup.config.batching != "continuous":
        raise _user_error("argument --max-num-seqs-values: max_num_seqs is a continuous-batching "
                          f"dial; {setup.config.batching} batching ignores it (see --max-batch-size)")
    swept = "request_rate" if by_rate else "max_num_seqs"
    values = args.request_rates if by_rate else args.max_num_seqs_values
    if by_rate:
        scenarios = [setup.scenario.with_workload(request_rate=float(v)) for v in values]
    else:
        scenarios = [setup.scenario.with_engine(max_num_seqs=v) for v in values]
    for sc in scenarios:  # refuse a bad point before running any
        sc.engine_config(setup.profiles)
    per_run = setup.scenario.workload.num_prompts if setup.scenario.workload.arrival != "trace" else None
    lat_key, lat_name = ("p99_ttft_ms", "TTFT") if by_rate else ("p99_tpot_ms", "TPOT")

    with _output_file(args.csv, "--csv") as csv_file:
        summaries = []
        with Runner(profiles=setup.profiles) as runner:
            runner.expect(per_run * len(scenarios) if per_run else None)
            for v, sc in zip(values, scenarios):
                label = f"rate {report.rate_text(v)} req/s" if by_rate else f"max_num_seqs {v}"
                summaries.append(runner.run(sc, label))
        knee = find_knee(values, [s.metrics["output_throughput"] for s in summaries],
                         [s.metrics[lat_key] for s in summaries], factor=args.knee_factor,
                         latency_name=lat_name)
        if csv_file is not None:
            report.write_sweep_csv(csv_file, swept, values, summaries, knee.index)

    if args.json:
        _print_json({
            "swept": swept,
            "knee_index": knee.index,
            "knee_reason": knee.reason or None,
            "knee_latency": lat_key,
            "knee_factor": args.knee_factor,
            "points": [{swept: v, **s.metrics} for v, s in zip(values, summaries)],
        })
        return EXIT_OK
    label = "rate" if by_rate else "max_num_seqs"
    print(report.setup_text(setup.scenario, setup.deployment, setup.config, swept=swept))
    print()
    print(report.sweep_table(swept, values, summaries, knee.index))
    print()
    print(textwrap.fill(knee.explain(values, label, args.knee_factor, lat_name), width=100))
    print()
    chart = scatter([(s.metrics["output_throughput"], s.metrics[lat_key]) for s in summaries],
                    highlight=knee.index, y_label=f"{lat_name} p99 (ms, log scale)",
                    x_label="output throughput (tok/s)   o = point, * = knee")
    print("\n".join(chart))
    if args.csv:
        print(f"\nPoints written to {args.csv}")
    return EXIT_OK


# -- plan ------------------------------------------------------------------------------------------

def vllm_dials(setup: Setup, config=None) -> dict:
    """The vLLM engine arguments for the dials this run used: the two batch dials always, the
    others only where they differ from vLLM's defaults."""
    config = config or setup.config
    sc, d = setup.scenario, setup.deployment
    dials = {"max_num_seqs": config.max_num_seqs,
             "max_num_batched_tokens": config.max_num_batched_tokens}
    if d.tensor_parallel_size > 1:
        dials["tensor_parallel_size"] = d.tensor_parallel_size
    if sc.kv_cache_dtype not in ("auto", "bf16"):  # bf16 is what "auto" gives every preset
        dials["kv_cache_dtype"] = sc.kv_cache_dtype
    if sc.gpu_memory_utilization != 0.92:
        dials["gpu_memory_utilization"] = sc.gpu_memory_utilization
    if sc.block_size != 16:
        dials["block_size"] = sc.block_size
    if sc.num_gpu_blocks_override is not None:
        dials["num_gpu_blocks_override"] = sc.num_gpu_blocks_override
    if not config.enable_chunked_prefill:
        dials["enable_chunked_prefill"] = False
    if config.long_prefill_token_threshold:
        dials["long_prefill_token_threshold"] = config.long_prefill_token_threshold
    if config.scheduling_policy != "fcfs":
        dials["scheduling_policy"] = config.scheduling_policy
    if config.max_model_len != d.model.max_model_len:
        dials["max_model_len"] = config.max_model_len
    return dials


def vllm_serve_command(setup: Setup) -> str:
    words = ["vllm", "serve", hf_id(setup.deployment.model)]
    for key, value in vllm_dials(setup).items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            words.append(flag if value else "--no-" + flag[2:])
        else:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return " ".join(words)


def vllm_llm_call(setup: Setup, config) -> str:
    """The same dials as arguments of vLLM's offline `LLM` class."""
    kwargs = {"model": hf_id(setup.deployment.model), **vllm_dials(setup, config)}
    return "LLM(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"


def hf_id(model) -> str:
    """The name `vllm serve` takes: the profile's Hugging Face id, else its own id."""
    return model.hf_id or model.id


@user_errors
def cmd_plan(args: argparse.Namespace) -> int:
    slo_given = [f for f, v in (("--ttft-p99", args.ttft_p99), ("--tpot-p99", args.tpot_p99),
                                ("--peak-rate", args.peak_rate)) if v is not None]
    if args.offline is not None:
        if slo_given:
            raise _user_error(f"argument {slo_given[0]}: not allowed with --offline "
                              "(an offline job has no latency target)")
        if args.workload or args.num_prompts is not None:
            flag = "--workload" if args.workload else "--num-prompts"
            raise _user_error(f"argument {flag}: not allowed with --offline (N requests are queued at once)")
        return _plan_offline(args)
    if args.ttft_p99 is None and args.tpot_p99 is None:
        raise _user_error("give a latency SLO (--ttft-p99 MS and/or --tpot-p99 MS), "
                          "or --offline N to plan a batch job")
    if args.workload:
        raise _user_error("argument --workload: not allowed with plan (it searches over request rates)")
    setup = build_setup(args)
    if setup.config.batching != "continuous":
        print("note: vLLM always batches continuously; the plan models "
              f"{setup.config.batching} batching as asked", file=sys.stderr)
    slo = Slo(args.ttft_p99, args.tpot_p99)
    if args.num_prompts is None and not args.scenario:
        setup = Setup(setup.scenario.with_workload(num_prompts=PLAN_NUM_PROMPTS), setup.profiles)
    num_prompts = setup.scenario.workload.num_prompts
    with Runner(profiles=setup.profiles) as runner:
        runner.expect(None)

        def run_at(r: float, n: int):
            label = "all queued at once" if math.isinf(r) else f"rate {r:.2f} req/s"
            return runner.run(setup.scenario.with_workload(request_rate=r, num_prompts=n), label)

        plan = plan_rate(run_at, slo, num_prompts)
    command = vllm_serve_command(setup)
    replicas = None
    if plan.feasible and args.peak_rate is not None:
        replicas = replicas_needed(args.peak_rate, args.headroom, plan.best.rate)
    sat = plan.saturated.summary.metrics["request_throughput"]

    if args.json:
        _print_json({
            "slo": {"p99_ttft_ms": slo.ttft_p99_ms, "p99_tpot_ms": slo.tpot_p99_ms},
            "feasible": plan.feasible,
            "saturated_rate": sat,
            "max_rate": plan.best.rate if plan.feasible else None,
            "precision": plan.precision if plan.feasible else None,
            "limited_by": plan.limited_by or None,
            "at_max_rate": report.plan_point_json(plan.best) if plan.feasible else None,
            "closest": None if plan.feasible else report.plan_point_json(plan.closest),
            "peak_rate": args.peak_rate,
            "headroom": args.headroom,
            "replicas": replicas,
            "vllm_command": command,
            "points": [report.plan_point_json(p) for p in [plan.saturated, *plan.points]],
        })
        return EXIT_OK if plan.feasible else EXIT_FAILURE

    print(report.setup_text(setup.scenario, setup.deployment, setup.config, swept="request_rate"))
    print(f"SLO: {slo.text()}.")
    print()
    print(report.plan_table(plan))
    print()
    print(f"Saturated rate ({num_prompts} requests queued at once): {sat:.2f} req/s.")
    if not plan.feasible:
        p = plan.closest
        w = p.window
        print(textwrap.fill(
            f"No request rate meets the SLO. The closest point is {p.rate:.2f} req/s, where "
            f"{' and '.join(p.misses)} (p99 TTFT {w['p99_ttft_ms']:.1f} ms, "
            f"p99 TPOT {w['p99_tpot_ms']:.2f} ms). "
            "Even a nearly idle replica misses it: lower latency needs a faster GPU, "
            "--tensor-parallel-size, --kv-cache-dtype fp8, or a smaller model.", width=100))
        return EXIT_FAILURE
    b = plan.best
    w = b.window
    if plan.limited_by == "sweep":
        print(f"The SLO holds up to {b.rate:.2f} req/s, the top of the search "
              f"({PLAN_FRACTIONS[-1]:g}x the saturated rate).")
    else:
        text = (f"Highest rate meeting the SLO: {b.rate:.2f} req/s per replica (within "
                f"{plan.precision:.2f} req/s). At {plan.bracket_high:.2f} req/s: "
                f"{'; '.join(plan.first_miss.misses)}.")
        if plan.limited_by == "throughput":
            text += (" The replica is near its capacity: its throughput, not the SLO, sets the "
                     "limit (longer runs, --num-prompts, settle closer to it).")
        print(textwrap.fill(text, width=100))
    print(f"  At that rate: p99 TTFT {w['p99_ttft_ms']:.1f} ms, p99 TPOT {w['p99_tpot_ms']:.2f} ms, "
          f"about {b.rate * w['mean_output_len']:,.0f} output tok/s, "
          f"{b.rate * w['mean_e2e_ms'] / 1000:.0f} requests running.")
    if replicas is not None:
        need = args.peak_rate * (1 + args.headroom)
        print(f"Replicas for a peak of {args.peak_rate:g} req/s with {args.headroom:.0%} headroom: "
              f"ceil({need:g} / {b.rate:.2f}) = {replicas}.")
    print()
    print("vLLM command for each replica:")
    print("  " + command)
    return EXIT_OK


def _plan_offline(args: argparse.Namespace) -> int:
    import numpy as np

    from sim.workload import generate

    n = args.offline
    setup = build_setup(args)
    sc = replace(setup.scenario, offline=True).with_workload(num_prompts=n, request_rate=math.inf)
    setup = Setup(sc, setup.profiles)
    if setup.config.batching != "continuous":
        raise _user_error("argument --batching: --offline plans vLLM's continuous batching only")
    d, cfg = setup.deployment, setup.config
    specs = generate(sc.workload, np.random.default_rng(sc.seed))
    per_request = mean_peak_blocks(d.block_size, [(s.prompt_len, s.output_len) for s in specs],
                                   cfg.max_model_len)
    kv_fit = min(n, max(1, math.floor(d.usable_blocks / per_request)))
    if args.max_num_seqs is not None:
        candidates = [("as given", args.max_num_seqs)]
    else:
        candidates = [("fits the KV cache", kv_fit)]
        if min(cfg.max_num_seqs, n) != kv_fit:  # with more seats than requests, both runs are alike
            candidates.append(("vLLM default", cfg.max_num_seqs))
    results = []
    with Runner(profiles=setup.profiles) as runner:
        runner.expect(n * len(candidates))
        for why, seats in candidates:
            dials = {"max_num_seqs": seats}
            if args.max_num_batched_tokens is None and cfg.max_num_batched_tokens < seats:
                dials["max_num_batched_tokens"] = seats  # vLLM needs a token per seat
            run_sc = sc.with_engine(**dials)
            config = run_sc.engine_config(setup.profiles)
            results.append((why, config, runner.run(run_sc, f"max_num_seqs {seats}")))
    _, config, best = min(results, key=lambda r: (r[2].metrics["duration"], r[1].max_num_seqs))
    m = best.metrics
    llm = vllm_llm_call(setup, config)
    if args.json:
        _print_json({
            "offline": True, "num_prompts": n, "kv_fit_max_num_seqs": kv_fit,
            "max_num_seqs": config.max_num_seqs, "max_num_batched_tokens": config.max_num_batched_tokens,
            "job_time_s": m["duration"], "request_throughput": m["request_throughput"],
            "output_throughput": m["output_throughput"], "num_preemptions": m["num_preemptions"],
            "llm": llm,
            "candidates": [{"why": w, "max_num_seqs": c.max_num_seqs,
                            "max_num_batched_tokens": c.max_num_batched_tokens,
                            "job_time_s": s.metrics["duration"],
                            "output_throughput": s.metrics["output_throughput"],
                            "mean_running": s.metrics["mean_running"],
                            "num_preemptions": s.metrics["num_preemptions"]} for w, c, s in results],
        })
        return EXIT_OK
    print(report.setup_text(sc, d, cfg, swept="offline"))
    print()
    print(report.offline_table(results, best))
    print()
    fits = (f"about {kv_fit} of these requests at their peak ({per_request:.0f} blocks each): "
            "the largest batch that never preempts" if kv_fit < n else
            f"all {n} of these requests at their peak ({per_request:.0f} blocks each)")
    print(textwrap.fill(f"The KV cache ({d.usable_blocks:,} blocks) holds {fits}.", width=100))
    print(textwrap.fill(
        f"Job time for {n:,} requests: {report.duration_text(m['duration'])} at {m['output_throughput']:,.0f} "
        f"output tok/s ({m['request_throughput']:.2f} req/s), with max_num_seqs {config.max_num_seqs}.",
        width=100))
    print()
    print("vLLM offline (from vllm import LLM):")
    print("  " + llm)
    return EXIT_OK


# -- steps -----------------------------------------------------------------------------------------

def cmd_steps(args: argparse.Namespace) -> int:
    from steps import StepError, load_steps

    try:
        lessons = load_steps()
    except StepError as exc:
        print(f"batchtui: error: the lessons cannot be loaded: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    from batchtui.progress import ProgressStore

    progress, notice = ProgressStore().load()
    if notice:
        print(notice, file=sys.stderr)
    done = progress.completed
    if args.json:
        _print_json([{"number": s.number, "title": s.title, "section": s.section,
                      "minutes": s.minutes, "done": s.number in done,
                      "current": s.number == progress.current_step} for s in lessons])
        return EXIT_OK
    section = None
    for s in lessons:
        if s.section != section:
            section = s.section
            print(f"\n{section}" if s.number > 1 else section)
        mark = "[x]" if s.number in done else "[ ]"
        here = "  <- you are here" if s.number == progress.current_step else ""
        print(f"  {mark} {s.number:>2}. {s.title} ({s.minutes} min){here}")
    finished = sum(1 for s in lessons if s.number in done)
    print(f"\n{finished} of {len(lessons)} steps done. Run `batchtui` to continue at step "
          f"{progress.current_step}.")
    return EXIT_OK
