"""Flag groups shared by the headless commands: hardware and engine (as `vllm serve` spells them),
traffic (as `vllm bench serve` spells it), and the result options of `vllm bench serve`."""

from __future__ import annotations

import argparse

from . import options as o

from .flag_table import (DATASET_NAMES, DEFAULT_INPUT_LEN, DEFAULT_NUM_PROMPTS, DEFAULT_OUTPUT_LEN, DTYPES,
                         PARTIAL_PREFILL_FLAGS, SPEC_SHORTHANDS, add_rows)
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
    add_rows(p, t.TRAFFIC_ROWS, omit=() if rate_flag else ("--request-rate",),
             changes={"--num-prompts": {"help": count_help}} if count_help else None)
    from .vllm_flags import add_flags

    add_flags(p)


def add_slo_args(p: argparse.ArgumentParser):
    """The service level plan and search are asked for (its group, for a command's own rows)."""
    return add_rows(p, t.SLO_ROWS)[t.SERVICE]


# vllm bench serve's sampling flags: each sent in every request's body when given (vLLM 0.33's
# `sampling parameters` group, vllm/benchmarks/serve.py).
SAMPLING_FLAGS = (("--top-p", "top_p", float), ("--top-k", "top_k", int), ("--min-p", "min_p", float),
                  ("--temperature", "temperature", float), ("--frequency-penalty", "frequency_penalty", float),
                  ("--presence-penalty", "presence_penalty", float),
                  ("--repetition-penalty", "repetition_penalty", float))


def add_client_args(p: argparse.ArgumentParser) -> None:
    """vllm bench serve's flags for the server it loads and the requests it sends (`batchtui
    bench`), spelled and defaulted as vLLM 0.33 has them. Added before the table's other flags
    (`vllm_flags.add_flags`), so these are used, not merely recorded."""
    c = p.add_argument_group("the server (vllm bench serve's flags)")
    c.add_argument("--base-url", metavar="URL",
                   help="the server, such as http://gpu-box:8000 (default http://--host:--port)")
    c.add_argument("--host", default="127.0.0.1", help="the server's host when --base-url is not given "
                                                       "(default 127.0.0.1)")
    c.add_argument("--port", type=o.positive_int, default=8000, help="the server's port (default 8000)")
    c.add_argument("--endpoint", metavar="PATH",
                   help="the API path (default /v1/completions; /v1/chat/completions with --backend openai-chat)")
    c.add_argument("--backend", default="openai", metavar="NAME",
                   help="the request format: openai or vllm (completions, the default), openai-chat (chats)")
    c.add_argument("--served-model-name", metavar="NAME",
                   help="the model name the API answers to, when it is not --model")
    c.add_argument("--header", nargs="*", metavar="KEY=VALUE", help="HTTP headers sent with every request")
    c.add_argument("--ignore-eos", action="store_true",
                   help="ask the server to generate every answer to its full length (on by default for the "
                        "random dataset and traces, as vllm bench serve)")
    c.add_argument("--request-id-prefix", metavar="TEXT",
                   help="prefix of each request's x-request-id header (default bench-<8 hex digits>-)")
    c.add_argument("--logprobs", type=o.non_negative_int, metavar="N", help="log probabilities asked per token")
    c.add_argument("--extra-body", metavar="JSON", help="a JSON object of fields added to every request's body")
    s = p.add_argument_group("sampling parameters (vllm bench serve's; sent when given)")
    for flag, _, kind in SAMPLING_FLAGS:
        s.add_argument(flag, type=o.integer if kind is int else o.finite_float, metavar="X")
    w = p.add_argument_group("before the run")
    w.add_argument("--num-warmups", type=o.non_negative_int, default=0, metavar="N",
                   help="requests sent (the first prompt) before the measured run, not measured (default 0)")
    w.add_argument("--ready-check-timeout-sec", type=o.non_negative_int, default=0, metavar="S",
                   help="wait up to S seconds for the server to answer a first request (default 0: no wait)")
    w.add_argument("--disable-tqdm", action="store_true", help="no progress bar")
    w.add_argument("--insecure", action="store_true", help="do not check the server's TLS certificate")


def add_result_args(p: argparse.ArgumentParser, *, detailed: bool = True, label: str = "batchtui-sim"):
    r = p.add_argument_group("results (vllm bench serve's flags)")
    r.add_argument("--percentile-metrics", type=o.metric_list, metavar="LIST",
                   help="metrics whose percentiles are printed: from ttft, tpot, itl, e2el, "
                        "client_queue_time, e2el_including_client_queue (the last two under "
                        "--max-concurrency; default ttft,tpot,itl)")
    r.add_argument("--metric-percentiles", type=o.percentile_list, metavar="LIST",
                   help="percentiles printed, such as 50,90,99 (default 99)")
    r.add_argument("--goodput", type=o.goodput_pair, nargs="+", metavar="KEY:MS",
                   help="service level objectives for request_goodput, such as ttft:200 tpot:25 "
                        "(keys ttft, tpot, e2el; ms)")
    r.add_argument("--save-result", action="store_true",
                   help="save the result as JSON in vllm bench serve's layout")
    r.add_argument("--append-result", action="store_true",
                   help="append the result to the file (a line of JSON), as vllm bench serve does")
    if detailed:
        r.add_argument("--save-detailed", action="store_true",
                       help="with the per-request arrays (input_lens, output_lens, ttfts, itls, errors)")
    r.add_argument("--result-dir", metavar="DIR", help="directory for --save-result (default: here)")
    r.add_argument("--result-filename", metavar="NAME",
                   help="file name for --save-result (default {label}-{rate}qps[-concurrencyN]-{model}-"
                        "{date}.json, numbered -2, -3 ... when a run of that second has it)")
    r.add_argument("--label", metavar="TEXT", help=f"label of the result (default {label})")
    r.add_argument("--metadata", nargs="*", metavar="KEY=VALUE",
                   help="extra KEY=VALUE pairs stored in the saved result")
    return r


def add_jobs_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", "-j", type=o.positive_int, metavar="N",
                   help="processes to run points in (default: every core this process may use); "
                        "results are the same for any N")
