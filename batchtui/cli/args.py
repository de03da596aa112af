"""Flag groups shared by the headless commands: hardware and engine (as `vllm serve` spells them),
traffic (as `vllm bench serve` spells it), and the result options of `vllm bench serve`."""

from __future__ import annotations

import argparse

from . import options as o

# Traffic defaults are vllm bench serve's: its random dataset (1024 in / 128 out), 1000 prompts,
# every request sent at once (--request-rate inf) with Poisson gaps otherwise (--burstiness 1).
DEFAULT_INPUT_LEN = 1024
DEFAULT_OUTPUT_LEN = 128
DEFAULT_NUM_PROMPTS = 1000
DATASET_NAMES = ("random", "sharegpt", "custom", "timed_trace", "prefix_repetition", "mooncake_trace")
TRACE_DATASETS = ("timed_trace", "mooncake_trace")
"""A trace file: vLLM's timed_trace (its defaults: seconds, 16-token hash blocks), or, the
simulator's own name, a Mooncake trace (milliseconds, 512-token blocks)."""
# vllm serve's --dtype: the 16-bit ones are the profiles' 2-byte weights; fp32 has no tensor-core peak here.
DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
# vLLM V1 refuses these above 1 ("Concurrent Partial Prefill is not supported"); 0.27 removed them.
PARTIAL_PREFILL_FLAGS = ("--max-num-partial-prefills", "--max-long-partial-prefills")
# vllm bench serve's prefix_repetition dataset: G prefixes of P tokens, each prompt one of them and
# S tokens of its own, answers of O tokens (its defaults).
PREFIX_REPETITION = {
    "--prefix-repetition-prefix-len": ("workload.prefix_len", 256),
    "--prefix-repetition-suffix-len": ("workload.input.mean", 256),
    "--prefix-repetition-num-prefixes": ("workload.num_prefixes", 10),
    "--prefix-repetition-output-len": ("workload.output.mean", 128),
}
"""--dataset-name prefix_repetition's flags: the dial each sets and its default (vllm bench
serve's). The dataset's lengths are exact: its prompts' own part and its answers are fixed."""


# vllm serve's shorthands for keys of --speculative-config (vLLM 0.33's EngineArgs.create_speculative_config).
SPEC_SHORTHANDS = (("--spec-method", "method", str, "NAME"), ("--spec-model", "model", str, "ID"),
                   ("--spec-tokens", "num_speculative_tokens", int, "K"))


def add_setup_args(p: argparse.ArgumentParser) -> None:
    from sim.profiles import BUILTIN_PROFILES

    gpus = ", ".join(BUILTIN_PROFILES.gpus)
    models = ", ".join(BUILTIN_PROFILES.models)
    g = p.add_argument_group("hardware and model")
    g.add_argument("--scenario", metavar="FILE",
                   help="start from a scenario TOML file (the playground saves them); flags given "
                        "here override it")
    g.add_argument("--profiles", metavar="FILE",
                   help="a TOML file of extra or overriding GPU and model profiles")
    g.add_argument("--gpu", metavar="NAME",
                   help=f"GPU: {gpus}, or its nvidia-smi name such as \"NVIDIA H100 80GB HBM3\", "
                        "or auto: the GPU nvidia-smi reports on this machine (default h100-sxm)")
    g.add_argument("--model", metavar="NAME",
                   help=f"model: a Hugging Face id such as meta-llama/Llama-3.1-8B-Instruct, or one "
                        f"of {models} (default llama-3.1-8b)")
    g.add_argument("--hf-config", "--hf-config-path", dest="hf_config", metavar="FILE",
                   help="the model's Hugging Face config.json (or a directory holding one): a dense model, a "
                        "mixture of experts, MLA or sliding windows from its fields, named by --model")
    e = p.add_argument_group("engine (vllm serve's flags; unset = vLLM 0.33's default for the GPU)")
    from .vllm_flags import BY_FLAG

    for f in o.engine_flags():
        group = g if f.where == "deployment" else e
        group.add_argument(f.flag, dest=f.dial, **f.kwargs)
        for short in BY_FLAG[f.flag].aliases if f.flag in BY_FLAG else ():  # -tp, -q: vLLM's short spellings
            group.add_argument(short, dest=f.dial, **{**f.kwargs, "help": argparse.SUPPRESS})
    for flag, key, kind, meta in SPEC_SHORTHANDS:
        g.add_argument(flag, type=kind, metavar=meta, dest=o.dest(flag),
                       help=f"speculative decoding's {key}, merged into --speculative-config as vLLM does")
    e.add_argument("--dtype", choices=DTYPES, metavar="DTYPE",
                   help="weights' and activations' type: auto, half, float16 or bfloat16 (2 bytes, as the "
                        "profiles assume); float32 is refused")
    for flag in PARTIAL_PREFILL_FLAGS:
        e.add_argument(flag, type=o.positive_int, metavar="N",
                       help="1 only, as vLLM's V1 scheduler runs (it refuses any other value)")


def add_traffic_args(p: argparse.ArgumentParser, *, rate_flag: bool = True, count_help: str = "") -> None:
    t = p.add_argument_group("traffic (vllm bench serve's flags and defaults)")
    from sim.dials import find

    from .vllm_flag_rows import DATASET_REFUSALS

    t.add_argument("--dataset-name", choices=DATASET_NAMES + tuple(DATASET_REFUSALS), default=None,
                   help="where lengths come from: random (default), sharegpt or custom (a file "
                        "given with --dataset-path), timed_trace (a trace: arrivals too, read as vllm "
                        "bench serve reads it), mooncake_trace (a Mooncake trace: timed_trace in ms with "
                        "512-token hash blocks), or prefix_repetition (prompts sharing one of a few prefixes)")
    t.add_argument("--dataset-path", metavar="FILE",
                   help="the ShareGPT JSON, custom JSON Lines ({\"prompt\": ...} a line) or trace file")
    t.add_argument("--num-prompts", type=o.prompt_count, metavar="N",
                   help=count_help or f"requests in the run (default {DEFAULT_NUM_PROMPTS})")
    if rate_flag:
        t.add_argument("--request-rate", type=o.rate, metavar="R",
                       help="requests/s (default inf: every request sent at once, as vllm bench "
                            "serve); rescales a trace of ours to this mean rate (a timed trace is sent at "
                            "its timestamps: vllm bench serve ignores the rate)")
    t.add_argument("--burstiness", type=o.burstiness, metavar="B",
                   help="gamma shape of the gaps between requests: 1 = Poisson (default), below 1 "
                        "burstier, inf = evenly spaced")
    t.add_argument("--max-concurrency", type=o.positive_int, metavar="N",
                   help="most requests the client keeps in flight (default: no cap)")
    t.add_argument("--ramp-up-strategy", choices=("linear", "exponential"),
                   help="raise the rate over the run from --ramp-up-start-rps to --ramp-up-end-rps")
    t.add_argument("--ramp-up-start-rps", type=o.positive_float, metavar="R", help="rate at the start of a ramp-up")
    t.add_argument("--ramp-up-end-rps", type=o.positive_float, metavar="R", help="rate at the end of a ramp-up")
    t.add_argument("--random-input-len", "--input-len", type=o.positive_int, metavar="N",
                   help=f"prompt tokens (default {DEFAULT_INPUT_LEN})")
    t.add_argument("--random-output-len", "--output-len", type=o.positive_int, metavar="N",
                   help=f"output tokens (default {DEFAULT_OUTPUT_LEN}); also the fixed answer length of a "
                        "sharegpt or custom dataset")
    t.add_argument("--random-range-ratio", type=o.range_ratio, metavar="R",
                   help="lengths uniform in [len x (1 - R), len x (1 + R)], R in [0, 1) (default 0)")
    t.add_argument("--sharegpt-output-len", type=o.positive_int, metavar="N",
                   help="answer length for every ShareGPT request (default: the conversation's)")
    t.add_argument("--custom-output-len", type=o.positive_int, metavar="N",
                   help="answer length for a custom dataset (default 256)")
    add_sharing_args(p)
    x = p.add_argument_group("traffic (the simulator's own)")
    x.add_argument("--arrival", choices=("gamma", "poisson", "constant", "bursts"),
                   help="gamma: as vllm bench serve sends them (default); poisson: exponential gaps "
                        "not rescaled (the tutorial's); constant; bursts of --burst-size")
    x.add_argument("--burst-size", type=o.positive_int, metavar="N", help="requests per burst (default 16)")
    for side in ("input", "output"):
        x.add_argument(f"--{side}-dist", choices=("fixed", "uniform", "lognormal"),
                       help=f"distribution of {side} lengths (default fixed)")
        x.add_argument(f"--{side}-len-min", type=o.positive_int, metavar="N",
                       help=f"shortest {side} (uniform low bound; lognormal clip)")
        x.add_argument(f"--{side}-len-max", type=o.positive_int, metavar="N",
                       help=f"longest {side} (uniform high bound; lognormal clip)")
        x.add_argument(f"--{side}-sigma", type=o.non_negative_float, metavar="S",
                       help=f"lognormal shape of {side} lengths (default 0.5)")
    x.add_argument("--workload", metavar="FILE",
                   help="a trace to replay (= --dataset-name timed_trace --dataset-path FILE): JSON "
                        "Lines of ours, {\"arrival_time\": s, \"prompt_len\": n, \"output_len\": n}, or "
                        "vLLM's timed trace, {\"timestamp\": s, \"input_length\": n, "
                        "\"output_length\": n, \"hash_ids\": [...]}")
    for path in ("workload.client_request_s", "workload.client_token_s"):
        spec = find(path)  # (the flag in ms, the value in seconds: the dial's flag_scale)
        x.add_argument(spec.flag, type=o.dial_type(spec), metavar="MS", help=spec.help)
    x.add_argument("--seed", type=o.seed, metavar="N", help="random seed (default 0)")
    t.add_argument("--no-oversample", action="store_true",
                   help="with a dataset file: refused (the simulator oversamples a short file, as vLLM by "
                        "default); with random prompts nothing is oversampled")
    t.add_argument("--disable-shuffle", action="store_true",
                   help="with a dataset file: refused (its prompts are shuffled with the seed); with random "
                        "prompts nothing is shuffled")
    from .vllm_flags import add_flags

    add_flags(p)


def add_sharing_args(p: argparse.ArgumentParser) -> None:
    """What prompts share, for prefix caching: vllm bench serve's prefix flags, conversations and
    a trace's hash block size (names, ranges and help from the table of dials)."""
    from sim.dials import find

    def dial(path: str):
        return {"type": o.dial_type(find(path)), "help": find(path).help}

    d = {flag.removeprefix("--prefix-repetition-"): default for flag, (_, default) in PREFIX_REPETITION.items()}
    s = p.add_argument_group("shared prefixes and conversations (prefix caching)")
    s.add_argument("--random-prefix-len", metavar="N",
                   **{**dial("workload.prefix_len"), "help": dial("workload.prefix_len")["help"]
                      + " (also spelled --common-prefix-len)"})
    s.add_argument("--common-prefix-len", dest="random_prefix_len", metavar="N",  # vllm bench serve's other name
                   **{**dial("workload.prefix_len"), "help": argparse.SUPPRESS})
    s.add_argument("--prefix-repetition-prefix-len", type=o.dial_type(find("workload.prefix_len")), metavar="N",
                   help=f"prefix_repetition: tokens of each shared prefix (default {d['prefix-len']})")
    s.add_argument("--prefix-repetition-suffix-len", type=o.positive_int, metavar="N",
                   help=f"prefix_repetition: tokens of each prompt's own part (default {d['suffix-len']})")
    s.add_argument("--prefix-repetition-num-prefixes", type=o.dial_type(find("workload.num_prefixes")), metavar="N",
                   help=f"distinct shared prefixes, each request using one at random (prefix_repetition: "
                        f"default {d['num-prefixes']}; with --random-prefix-len too: default 1)")
    s.add_argument("--prefix-repetition-output-len", type=o.positive_int, metavar="N",
                   help=f"prefix_repetition: answer tokens (default {d['output-len']})")
    s.add_argument("--turns", metavar="N", **dial("workload.turns"))
    s.add_argument("--think-time", metavar="S", **dial("workload.think_time"))
    s.add_argument("--timed-trace-chunk-hash-size", "--hash-block-size", dest="hash_block_size", metavar="N",
                   **dial("workload.hash_block_size"))
    s.add_argument("--timed-trace-sec-multiplier", dest="trace_sec_multiplier", metavar="X",
                   **dial("workload.trace_sec_multiplier"))


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
