"""Flag groups shared by the headless commands: hardware and engine (as `vllm serve` spells them),
traffic (as `vllm bench serve` spells it), and the result options of `vllm bench serve`."""

from __future__ import annotations

import argparse

from . import options as o

from .flag_table import (DATASET_NAMES, DEFAULT_INPUT_LEN, DEFAULT_NUM_PROMPTS, DEFAULT_OUTPUT_LEN, DTYPES,
                         PARTIAL_PREFILL_FLAGS, SAMPLING_FLAGS, SPEC_SHORTHANDS, add_rows)
from . import flag_table as t

TRACE_DATASETS = ("timed_trace", "mooncake_trace")
"""A trace file: vLLM's timed_trace (its defaults: seconds, 16-token hash blocks), or, the
simulator's own name, a Mooncake trace (milliseconds, 512-token blocks)."""


def add_setup_args(p: argparse.ArgumentParser) -> None:
    """Hardware, model and engine: the table's rows (`flag_table`), the engine's from the dials."""
    add_rows(p, (*t.SETUP_HARDWARE, *t.engine_rows(), *t.SETUP_ENGINE_EXTRA))


def add_traffic_args(p: argparse.ArgumentParser, *, rate_flag: bool = True, count_help: str = "") -> None:
    """Traffic: vllm bench serve's flags, what prompts share, the simulator's own (`flag_table`),
    then every other vLLM flag (recorded or refused, `vllm_flags.add_flags`)."""
    rate, count = t.row_of("workload.request_rate"), t.row_of("workload.num_prompts")
    add_rows(p, t.TRAFFIC_ROWS, omit=() if rate_flag else (rate.flag,),
             changes={count.flag: {"help": count_help}} if count_help else None)
    from .vllm_flags import add_flags

    add_flags(p)


def add_slo_args(p: argparse.ArgumentParser):
    """The service level plan and search are asked for (its group, for a command's own rows)."""
    return add_rows(p, t.SLO_ROWS)[t.SERVICE]


def check_slo_args(args: argparse.Namespace, command: str) -> None:
    """What plan and search refuse in the service level and the traffic it is judged on."""
    from sim import rate_plan

    from .exits import UserError

    if args.max_concurrency is not None:
        raise UserError(o.flagged(
            f"argument {{workload.max_concurrency}}: not allowed with {command}: a client that holds requests back "
            f"hides the queue an SLO is about ({command} sizes a replica for open traffic, and --offline for vLLM's "
            "LLM class, which has no client); sim and sweep model a capped client"))
    if args.ramp_up_strategy:
        raise UserError(o.flagged(f"argument {{workload.ramp_up_strategy}}: not allowed with {command} (it searches "
                                  "over steady rates)"))
    if args.turns is not None and args.turns > 1 and (args.offline is not None or args.peak_rate is not None):
        why = ("--offline: an offline job is single requests queued at once" if args.offline is not None else
               "--peak-rate: the replicas check routes single requests, not conversations; plan one replica's "
               "rate without --peak-rate")
        raise UserError(o.flagged(f"argument {{workload.turns}}: not allowed with {why}"))
    slo_given = [row.flag for row in t.SLO_ROWS[:3] if row.given(args) is not None]
    if args.offline is not None:
        if slo_given:
            raise UserError(f"argument {slo_given[0]}: not allowed with --offline (an offline job has no latency "
                            "target)")
        if args.workload or args.num_prompts is not None:
            path = "workload.trace_path" if args.workload else "workload.num_prompts"
            raise UserError(o.flagged(f"argument {{{path}}}: not allowed with --offline (N requests are queued "
                                      "at once)"))
        if any(row.dial == "engine.api_server_count" and row.given(args) is not None for row in t.rows()):
            raise UserError(o.flagged("argument {engine.api_server_count}: not allowed with --offline (vLLM's LLM "
                                      "class runs the engine with no API server in front)"))
    elif args.ttft_p99 is None and args.tpot_p99 is None:
        raise UserError("give a latency SLO (--ttft-p99 MS and/or --tpot-p99 MS), or --offline N to plan a batch job")
    if args.num_prompts is not None and args.num_prompts < rate_plan.PLAN_MIN_PROMPTS:
        raise UserError(o.flagged(
            f"argument {{workload.num_prompts}}: {args.num_prompts} is too few to judge a rate: a point needs a "
            f"steady window of {rate_plan.PLAN_MIN_WINDOW} requests and {rate_plan.PLAN_MIN_WINDOW_S:g} s; give "
            f"at least {rate_plan.PLAN_MIN_PROMPTS} (or leave it out)"))


def add_client_args(p: argparse.ArgumentParser) -> None:
    """vllm bench serve's flags for the server it loads and the requests it sends (`batchtui
    bench`), spelled and defaulted as vLLM 0.33 has them. Added before the table's other flags
    (`vllm_flags.add_flags`), so these are used, not merely recorded."""
    add_rows(p, t.CLIENT_ROWS)


def add_result_args(p: argparse.ArgumentParser, *, detailed: bool = True, label: str = "batchtui-sim"):
    """vllm bench serve's result flags (`label`: the default --label this command writes)."""
    return add_rows(p, t.RESULT_ROWS, omit=() if detailed else ("--save-detailed",),
                    changes={"--label": {"help": f"label of the result (default {label})"}})[t.RESULTS]


def add_result_json(p: argparse.ArgumentParser):
    """--json (the result as JSON instead of the report) in the command's output group, returned
    for the command's other output flags."""
    return add_rows(p, (t.RESULT_JSON,))[t.OUTPUT]


def add_jobs_arg(p: argparse.ArgumentParser) -> None:
    add_rows(p, (t.JOBS,))
