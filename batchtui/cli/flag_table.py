"""The headless commands' shared flags, as rows of one table.

A row is one flag: its spellings (the help shows them; the first is the flag), the spellings it
also takes unshown (vLLM's short and older names: `-tp`, `--common-prefix-len`), its group, the
dial of `sim.dials` it sets (whose type and help it takes unless the row gives its own) and the
argparse keywords it adds. The engine and deployment flags are rows made from the dials
(`options.engine_flags`), their short spellings from vLLM's table (`vllm_flags.BY_FLAG`); the
hardware, traffic and service-level rows are written here. `add_rows` puts rows on a parser
(`args.py` composes each command's groups from them); `setup` turns the traffic rows into a
workload by one rule (`set_workload`): a row given sets the WorkloadSpec field of its dial, or of
its `sets` path. Help text names a dial as `{path}`, spelled by its flag (`sim.dials.spelled`).

This module imports nothing of the simulator until a parser is built: the tutorial's parser
(`batchtui.tui`) takes its --gpu and --profiles rows from here.
"""

from __future__ import annotations

import argparse
import functools
import weakref
from dataclasses import dataclass, field, replace

HARDWARE = "hardware and model"
ENGINE = "engine (vllm serve's flags; unset = vLLM 0.33's default for the GPU)"
TRAFFIC = "traffic (vllm bench serve's flags and defaults)"
SHARING = "shared prefixes and conversations (prefix caching)"
OWN_TRAFFIC = "traffic (the simulator's own)"
SERVICE = "service level"

# Traffic defaults are vllm bench serve's: its random dataset (1024 in / 128 out), 1000 prompts,
# every request sent at once (--request-rate inf) with Poisson gaps otherwise (--burstiness 1).
DEFAULT_INPUT_LEN = 1024
DEFAULT_OUTPUT_LEN = 128
DEFAULT_NUM_PROMPTS = 1000
DATASET_NAMES = ("random", "sharegpt", "custom", "timed_trace", "prefix_repetition", "mooncake_trace")
# vllm bench serve's prefix_repetition dataset: G prefixes of P tokens, each prompt one of them and
# S tokens of its own, answers of O tokens (its defaults).
PREFIX_REPETITION = "prefix_repetition"


@dataclass(frozen=True)
class Flag:
    """One flag of the headless commands."""

    spellings: tuple[str, ...]
    """As the help shows them; the first is the flag."""
    group: str
    """The title of its argument group."""
    dial: str = ""
    """The dial (`sim.dials` path) it sets: its type and help unless `opts` gives them."""
    opts: dict = field(default_factory=dict)
    """argparse keywords; a `type` given as a name is `options`' function of that name, a `help`
    may name dials as `{path}`."""
    hidden: tuple[str, ...] = ()
    """Other spellings it takes, not shown (added as actions of their own, the help suppressed)."""
    dest: str = ""
    """The argparse attribute (default: the dial's for an engine or deployment dial, else the flag's)."""
    sets: str | None = None
    """The workload path it sets when given (None: its dial's, for a workload dial; "": none, a
    rule of `setup` reads it)."""
    dataset: str = ""
    """Sets its path only with this --dataset-name (whose default it is then, `dataset_default`);
    refused with any other unless `any_dataset`."""
    dataset_default: object = None
    any_dataset: bool = False
    help_more: str = ""
    """Added to the dial's help."""
    literal: bool = False
    """Its help's braces are its own (a file name's pattern), not dials."""

    @property
    def flag(self) -> str:
        return self.spellings[0]

    @property
    def attr(self) -> str:
        """The attribute argparse sets."""
        if self.dest:
            return self.dest
        head, _, rest = self.dial.partition(".")
        if head == "engine":
            return rest
        if self.dial and "." not in self.dial:
            return self.dial
        return dest(self.flag)

    @property
    def path(self) -> str:
        """The workload path a given value sets ("" for none)."""
        if self.sets is not None:
            return self.sets
        return self.dial if self.dial.startswith("workload.") else ""

    def given(self, args: argparse.Namespace):
        return getattr(args, self.attr, None)


def dest(flag: str) -> str:
    """The argparse attribute of a flag."""
    return flag.lstrip("-").replace("-", "_")


def _f(spellings, group: str, dial: str = "", **opts) -> Flag:
    fields = {k: opts.pop(k) for k in ("hidden", "dest", "sets", "dataset", "dataset_default", "any_dataset",
                                       "help_more", "literal") if k in opts}
    names = (spellings,) if isinstance(spellings, str) else tuple(spellings)
    return Flag(names, group, dial, opts, **fields)


# -- hardware and model ------------------------------------------------------------------------------

PROFILES = _f("--profiles", HARDWARE, metavar="FILE",
              help="a TOML file of extra or overriding GPU and model profiles (batchtui calibrate writes one)")
GPU = _f("--gpu", HARDWARE, "gpu", metavar="NAME",
         help="GPU: {gpus}, or its nvidia-smi name such as \"NVIDIA H100 80GB HBM3\", or auto: the GPU "
              "nvidia-smi reports on this machine (default h100-sxm)")
MODEL = _f("--model", HARDWARE, "model", metavar="NAME",
           help="model: a Hugging Face id such as meta-llama/Llama-3.1-8B-Instruct, or one of {models} "
                "(default llama-3.1-8b)")
SETUP_HARDWARE = (
    _f("--scenario", HARDWARE, metavar="FILE",
       help="start from a scenario TOML file (the playground saves them; a relative path in it is from its own "
            "folder); flags given here override it"),
    PROFILES, GPU, MODEL,
    _f(("--hf-config", "--hf-config-path"), HARDWARE, dest="hf_config", metavar="FILE",
       help="the model's Hugging Face config.json (or a directory holding one): a dense model, a mixture of "
            "experts, MLA or sliding windows from its fields, named by {model}"),
)

# vllm serve's shorthands for keys of --speculative-config (vLLM 0.33's EngineArgs.create_speculative_config).
SPEC_SHORTHANDS = (("--spec-method", "method", "str", "NAME"), ("--spec-model", "model", "str", "ID"),
                   ("--spec-tokens", "num_speculative_tokens", "int", "K"))
# vllm serve's --dtype: the 16-bit ones are the profiles' 2-byte weights; fp32 has no tensor-core peak here.
DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
# vLLM V1 refuses these above 1 ("Concurrent Partial Prefill is not supported"); 0.27 removed them.
PARTIAL_PREFILL_FLAGS = ("--max-num-partial-prefills", "--max-long-partial-prefills")
SETUP_ENGINE_EXTRA = (
    *(_f(flag, HARDWARE, type=kind, metavar=meta,
         help=f"speculative decoding's {key}, merged into {{speculative_config}} as vLLM does")
      for flag, key, kind, meta in SPEC_SHORTHANDS),
    _f("--dtype", ENGINE, choices=DTYPES, metavar="DTYPE",
       help="weights' and activations' type: auto, half, float16 or bfloat16 (2 bytes, as the profiles assume); "
            "float32 is refused"),
    *(_f(flag, ENGINE, type="positive_int", metavar="N",
         help="1 only, as vLLM's V1 scheduler runs (it refuses any other value)") for flag in PARTIAL_PREFILL_FLAGS),
)

# -- traffic ------------------------------------------------------------------------------------------

TRAFFIC_ROWS = (
    _f("--dataset-name", TRAFFIC, "workload.dataset", sets="", choices="datasets", default=None,
       help="where lengths come from: random (default), sharegpt or custom (a file given with "
            "{workload.dataset_path}), timed_trace (a trace: arrivals too, read as vllm bench serve reads it), "
            "mooncake_trace (a Mooncake trace: timed_trace in ms with 512-token hash blocks), or "
            "prefix_repetition (prompts sharing one of a few prefixes)"),
    _f("--dataset-path", TRAFFIC, "workload.dataset_path", sets="", metavar="FILE",
       help="the ShareGPT JSON, custom JSON Lines ({\"prompt\": ...} a line) or trace file"),
    _f("--num-prompts", TRAFFIC, "workload.num_prompts", type="prompt_count", metavar="N",
       help=f"requests in the run (default {DEFAULT_NUM_PROMPTS})"),
    _f("--request-rate", TRAFFIC, "workload.request_rate", type="rate", metavar="R",
       help="requests/s (default inf: every request sent at once, as vllm bench serve); rescales a trace of ours "
            "to this mean rate (a timed trace is sent at its timestamps: vllm bench serve ignores the rate)"),
    _f("--burstiness", TRAFFIC, "workload.burstiness", type="burstiness", metavar="B",
       help="gamma shape of the gaps between requests: 1 = Poisson (default), below 1 burstier, inf = evenly spaced"),
    _f("--max-concurrency", TRAFFIC, "workload.max_concurrency", type="positive_int", metavar="N",
       help="most requests the client keeps in flight (default: no cap)"),
    _f("--ramp-up-strategy", TRAFFIC, "workload.ramp_up_strategy", choices=("linear", "exponential"),
       help="raise the rate over the run from {workload.ramp_up_start_rps} to {workload.ramp_up_end_rps}"),
    _f("--ramp-up-start-rps", TRAFFIC, "workload.ramp_up_start_rps", type="positive_float", metavar="R",
       help="rate at the start of a ramp-up"),
    _f("--ramp-up-end-rps", TRAFFIC, "workload.ramp_up_end_rps", type="positive_float", metavar="R",
       help="rate at the end of a ramp-up"),
    _f(("--random-input-len", "--input-len"), TRAFFIC, "workload.input.mean", type="positive_int", metavar="N",
       help=f"prompt tokens (default {DEFAULT_INPUT_LEN})"),
    _f(("--random-output-len", "--output-len"), TRAFFIC, "workload.output.mean", type="positive_int", metavar="N",
       help=f"output tokens (default {DEFAULT_OUTPUT_LEN}); also the fixed answer length of a sharegpt or custom "
            "dataset"),
    _f("--random-range-ratio", TRAFFIC, type="range_ratio", metavar="R",
       help="lengths uniform in [len x (1 - R), len x (1 + R)], R in [0, 1) (default 0)"),
    _f("--sharegpt-output-len", TRAFFIC, "workload.dataset_output_len", sets="", type="positive_int", metavar="N",
       help="answer length for every ShareGPT request (default: the conversation's)"),
    _f("--custom-output-len", TRAFFIC, type="positive_int", metavar="N",
       help="answer length for a custom dataset (default 256)"),
    # what prompts share, for prefix caching (ranges and help from the table of dials)
    _f("--random-prefix-len", SHARING, "workload.prefix_len", metavar="N", hidden=("--common-prefix-len",),
       help_more=" (also spelled --common-prefix-len)"),
    _f("--prefix-repetition-prefix-len", SHARING, "workload.prefix_len", metavar="N",
       dataset=PREFIX_REPETITION, dataset_default=256,
       help="prefix_repetition: tokens of each shared prefix (default {dataset_default})"),
    _f("--prefix-repetition-suffix-len", SHARING, type="positive_int", metavar="N", sets="workload.input.mean",
       dataset=PREFIX_REPETITION, dataset_default=256,
       help="prefix_repetition: tokens of each prompt's own part (default {dataset_default})"),
    _f("--prefix-repetition-num-prefixes", SHARING, "workload.num_prefixes", metavar="N",
       dataset=PREFIX_REPETITION, dataset_default=10, any_dataset=True,
       help="distinct shared prefixes, each request using one at random (prefix_repetition: default {dataset_default}; with "
            "{workload.prefix_len} too: default 1)"),
    _f("--prefix-repetition-output-len", SHARING, type="positive_int", metavar="N", sets="workload.output.mean",
       dataset=PREFIX_REPETITION, dataset_default=128, help="prefix_repetition: answer tokens (default {dataset_default})"),
    _f("--turns", SHARING, "workload.turns", metavar="N"),
    _f("--think-time", SHARING, "workload.think_time", metavar="S"),
    _f(("--timed-trace-chunk-hash-size", "--hash-block-size"), SHARING, "workload.hash_block_size",
       dest="hash_block_size", metavar="N"),
    _f("--timed-trace-sec-multiplier", SHARING, "workload.trace_sec_multiplier", dest="trace_sec_multiplier",
       metavar="X"),
    # the simulator's own
    _f("--arrival", OWN_TRAFFIC, "workload.arrival", choices=("gamma", "poisson", "constant", "bursts"),
       help="gamma: as vllm bench serve sends them (default); poisson: exponential gaps not rescaled (the "
            "tutorial's); constant; bursts of {workload.burst_size}"),
    _f("--burst-size", OWN_TRAFFIC, "workload.burst_size", type="positive_int", metavar="N",
       help="requests per burst (default 16)"),
    *(row for side in ("input", "output") for row in (
        _f(f"--{side}-dist", OWN_TRAFFIC, f"workload.{side}.dist", choices=("fixed", "uniform", "lognormal"),
           help=f"distribution of {side} lengths (default fixed)"),
        _f(f"--{side}-len-min", OWN_TRAFFIC, f"workload.{side}.low", type="positive_int", metavar="N",
           help=f"shortest {side} (uniform low bound; lognormal clip)"),
        _f(f"--{side}-len-max", OWN_TRAFFIC, f"workload.{side}.high", type="positive_int", metavar="N",
           help=f"longest {side} (uniform high bound; lognormal clip)"),
        _f(f"--{side}-sigma", OWN_TRAFFIC, f"workload.{side}.sigma", type="non_negative_float", metavar="S",
           help=f"lognormal shape of {side} lengths (default 0.5)"))),
    _f("--workload", OWN_TRAFFIC, "workload.trace_path", sets="", metavar="FILE",
       help="a trace to replay (= {workload.dataset} timed_trace {workload.dataset_path} FILE): JSON Lines of ours, "
            "{\"arrival_time\": s, \"prompt_len\": n, \"output_len\": n}, or vLLM's timed trace, {\"timestamp\": s, "
            "\"input_length\": n, \"output_length\": n, \"hash_ids\": [...]}"),
    # (in ms on the command line, in seconds in the dial: its flag_scale)
    _f("--client-request-ms", OWN_TRAFFIC, "workload.client_request_s", metavar="MS"),
    _f("--client-token-ms", OWN_TRAFFIC, "workload.client_token_s", metavar="MS"),
    _f("--seed", OWN_TRAFFIC, "seed", type="seed", metavar="N", help="random seed (default 0)"),
    _f("--no-oversample", TRAFFIC, action="store_true",
       help="with a dataset file: refused (the simulator oversamples a short file, as vLLM by default); with "
            "random prompts nothing is oversampled"),
    _f("--disable-shuffle", TRAFFIC, action="store_true",
       help="with a dataset file: refused (its prompts are shuffled with the seed); with random prompts nothing "
            "is shuffled"),
)

# -- the service level (plan and search) -----------------------------------------------------------------

SLO_ROWS = (
    _f("--ttft-p99", SERVICE, type="positive_float", metavar="MS", help="p99 time to first token, ms"),
    _f("--tpot-p99", SERVICE, type="positive_float", metavar="MS", help="p99 time per output token, ms"),
    _f("--peak-rate", SERVICE, type="positive_float", metavar="R", help="peak traffic to serve, req/s"),
    _f("--headroom", SERVICE, type="headroom", default="HEADROOM", metavar="PCT",
       help="share of each replica's SLO rate kept spare: a replica is planned at the rest of it "
            "(default {headroom}, as in step 16)"),
    _f("--seeds", SERVICE, type="positive_int", default="PLAN_SEEDS", metavar="N",
       help="seeds plan's search for the highest rate runs on (default {seeds}: {seed}, {seed} + 1, ...)"),
    _f("--offline", SERVICE, type="prompt_count", metavar="N",
       help="plan a batch job of N requests queued at once instead of an SLO"),
)


# -- vllm bench serve's client (batchtui bench) and results (sim, bench) ---------------------------------

CLIENT = "the server (vllm bench serve's flags)"
SAMPLING = "sampling parameters (vllm bench serve's; sent when given)"
BEFORE = "before the run"
RESULTS = "results (vllm bench serve's flags)"
OUTPUT = "output"
# vllm bench serve's sampling flags: each sent in every request's body when given (vLLM 0.33's
# `sampling parameters` group, vllm/benchmarks/serve.py).
SAMPLING_FLAGS = (("--top-p", "top_p", float), ("--top-k", "top_k", int), ("--min-p", "min_p", float),
                  ("--temperature", "temperature", float), ("--frequency-penalty", "frequency_penalty", float),
                  ("--presence-penalty", "presence_penalty", float),
                  ("--repetition-penalty", "repetition_penalty", float))
CLIENT_ROWS = (
    _f("--base-url", CLIENT, metavar="URL", help="the server, such as http://gpu-box:8000 (default http://--host:--port)"),
    _f("--host", CLIENT, default="127.0.0.1", help="the server's host when --base-url is not given (default 127.0.0.1)"),
    _f("--port", CLIENT, type="positive_int", default=8000, help="the server's port (default 8000)"),
    _f("--endpoint", CLIENT, metavar="PATH",
       help="the API path (default /v1/completions; /v1/chat/completions with --backend openai-chat)"),
    _f("--backend", CLIENT, default="openai", metavar="NAME",
       help="the request format: openai or vllm (completions, the default), openai-chat (chats)"),
    _f("--served-model-name", CLIENT, metavar="NAME", help="the model name the API answers to, when it is not {model}"),
    _f("--header", CLIENT, nargs="*", metavar="KEY=VALUE", help="HTTP headers sent with every request"),
    _f("--ignore-eos", CLIENT, action="store_true",
       help="ask the server to generate every answer to its full length (on by default for the random dataset and "
            "traces, as vllm bench serve)"),
    _f("--request-id-prefix", CLIENT, metavar="TEXT",
       help="prefix of each request's x-request-id header (default bench-<8 hex digits>-)"),
    _f("--logprobs", CLIENT, type="non_negative_int", metavar="N", help="log probabilities asked per token"),
    _f("--extra-body", CLIENT, metavar="JSON", help="a JSON object of fields added to every request's body"),
    *(_f(flag, SAMPLING, type="integer" if kind is int else "finite_float", metavar="X")
      for flag, _, kind in SAMPLING_FLAGS),
    _f("--num-warmups", BEFORE, type="non_negative_int", default=0, metavar="N",
       help="requests sent (the first prompt) before the measured run, not measured (default 0)"),
    _f("--ready-check-timeout-sec", BEFORE, type="non_negative_int", default=0, metavar="S",
       help="wait up to S seconds for the server to answer a first request (default 0: no wait)"),
    _f("--disable-tqdm", BEFORE, action="store_true", help="no progress bar"),
    _f("--insecure", BEFORE, action="store_true", help="do not check the server's TLS certificate"),
)
RESULT_ROWS = (
    _f("--percentile-metrics", RESULTS, type="metric_list", metavar="LIST",
       help="metrics whose percentiles are printed: from ttft, tpot, itl, e2el, client_queue_time, "
            "e2el_including_client_queue (the last two under {workload.max_concurrency}; default ttft,tpot,itl)"),
    _f("--metric-percentiles", RESULTS, type="percentile_list", metavar="LIST",
       help="percentiles printed, such as 50,90,99 (default 99)"),
    _f("--goodput", RESULTS, type="goodput_pair", nargs="+", metavar="KEY:MS",
       help="service level objectives for request_goodput, such as ttft:200 tpot:25 (keys ttft, tpot, e2el; ms)"),
    _f("--save-result", RESULTS, action="store_true", help="save the result as JSON in vllm bench serve's layout"),
    _f("--append-result", RESULTS, action="store_true",
       help="append the result to the file (a line of JSON), as vllm bench serve does"),
    _f("--save-detailed", RESULTS, action="store_true",
       help="with the per-request arrays (input_lens, output_lens, ttfts, itls, errors)"),
    _f("--result-dir", RESULTS, metavar="DIR", help="directory for --save-result (default: here)"),
    _f("--result-filename", RESULTS, metavar="NAME", literal=True,
       help="file name for --save-result (default {label}-{rate}qps[-concurrencyN]-{model}-{date}.json, numbered "
            "-2, -3 ... when a run of that second has it)"),
    _f("--label", RESULTS, metavar="TEXT", help="label of the result (default batchtui-sim)"),
    _f("--metadata", RESULTS, nargs="*", metavar="KEY=VALUE", help="extra KEY=VALUE pairs stored in the saved result"),
)
RESULT_JSON = _f("--json", OUTPUT, action="store_true",
                 help="print the result as JSON (the keys --save-result writes) instead of the report")
JOBS = _f(("--jobs", "-j"), "", type="positive_int", metavar="N",
          help="processes to run points in (default: every core this process may use); results are the same for "
               "any N")


# -- onto a parser -------------------------------------------------------------------------------------

def _spell(text: str) -> str:
    """Help text with each `{path}` spelled by its dial's flag (`options.flagged`)."""
    if "{" not in text:
        return text
    from .options import flagged

    return flagged(text)


def _values() -> dict:
    """What help and defaults name by a word: the built-in GPUs and models, the SLO defaults."""
    from sim import planning, rate_plan
    from sim.profiles import BUILTIN_PROFILES

    return {"gpus": BUILTIN_PROFILES.gpu_names(), "models": ", ".join(BUILTIN_PROFILES.models),
            "headroom": f"{planning.HEADROOM:.0%}".replace("%", "%%"), "seeds": str(rate_plan.PLAN_SEEDS),
            "HEADROOM": planning.HEADROOM, "PLAN_SEEDS": rate_plan.PLAN_SEEDS}


def kwargs(row: Flag, **changes) -> dict:
    """The argparse keywords of a row (`changes` replacing some: a command's own help, say). The
    simulator is imported only for what needs it (the tutorial's rows need nothing of it)."""
    opts = {**row.opts, **changes}
    if "." in row.dial and not {"type", "choices", "action"} & opts.keys():
        from sim.dials import find

        from . import options as o

        if find(row.dial).type in ("int", "float"):
            opts["type"] = o.dial_type(find(row.dial))
    if row.dial and "help" not in opts:
        from sim.dials import find

        opts["help"] = find(row.dial).help + row.help_more
    if isinstance(opts.get("type"), str):
        from . import options as o

        kind = opts["type"]
        opts["type"] = {"str": str, "int": int}.get(kind) or getattr(o, kind)
    if opts.get("choices") == "datasets":
        from .vllm_flag_rows import DATASET_REFUSALS

        opts["choices"] = DATASET_NAMES + tuple(DATASET_REFUSALS)
    words = None
    if isinstance(opts.get("default"), str) and opts["default"].isupper():
        words = _values()
        opts["default"] = words[opts["default"]]
    if isinstance(opts.get("help"), str) and opts["help"] is not argparse.SUPPRESS and not row.literal:
        text = opts["help"].replace("{dataset_default}", str(row.dataset_default))
        for word in ("gpus", "models", "headroom", "seeds"):
            if "{" + word + "}" in text:
                words = words or _values()
                text = text.replace("{" + word + "}", words[word])
        opts["help"] = _spell(text)
    return opts


_GROUPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""parser -> {title: its argument group}: rows of one group added at several times join it."""


def add_rows(p: argparse.ArgumentParser, rows, *, omit=(), changes: dict | None = None,
             group: str = "", into=None) -> dict:
    """Put `rows` on the parser, in their order, each in its group (made once per parser), or all
    in `group` (a title), or `into` (a group the command made, or the parser itself: its own
    options); `omit`: flags left out; `changes`: flag -> argparse keywords that differ for this
    command. Returns the parser's groups by title."""
    changes = changes or {}
    groups = _GROUPS.setdefault(p, {})
    for row in rows:
        if row.flag in omit:
            continue
        title = group or row.group
        if into is None and title not in groups:  # (no title: the parser's own options)
            groups[title] = p.add_argument_group(title) if title else p
        target = into if into is not None else groups[title]
        opts = kwargs(row, **changes.get(row.flag, {}))
        target.add_argument(*row.spellings, dest=row.attr, **opts)
        for other in row.hidden:
            target.add_argument(other, dest=row.attr, **{**opts, "help": argparse.SUPPRESS})
    return groups


@functools.cache
def engine_rows() -> tuple[Flag, ...]:
    """The engine and deployment flags: rows made from the dials, with vLLM's other spellings."""
    from . import options as o
    from .vllm_flags import BY_FLAG

    out = []
    for f in o.engine_flags():
        hidden = BY_FLAG[f.flag].aliases if f.flag in BY_FLAG else ()
        out.append(Flag((f.flag,), HARDWARE if f.where == "deployment" else ENGINE, f.spec.path, dict(f.kwargs),
                        hidden=hidden, dest=f.dial))
    return tuple(out)


def rows() -> tuple[Flag, ...]:
    """Every row of the table."""
    return (*SETUP_HARDWARE, *engine_rows(), *SETUP_ENGINE_EXTRA, *TRAFFIC_ROWS, *SLO_ROWS, *CLIENT_ROWS,
            *RESULT_ROWS, RESULT_JSON, JOBS)


def row_of(path: str) -> Flag:
    """The traffic row of a dial: the one spelled as the dial's flag (`sim.dials`), else the first."""
    from sim.dials import flag_of

    mine = [row for row in TRAFFIC_ROWS if row.dial == path]
    return next((row for row in mine if row.flag == flag_of(path)), mine[0])


def dataset_rows(dataset: str | None) -> dict[str, str]:
    """How a dataset's own flags spell the dials they set (prefix_repetition's lengths), path -> flag."""
    return {row.path: row.flag for row in TRAFFIC_ROWS if row.dataset and row.dataset == dataset}


def given_paths(args: argparse.Namespace) -> set[str]:
    """The dials (paths) whose flags this command line gave; a dataset's own flags for the paths
    they set with it."""
    dataset = getattr(args, "dataset_name", None)
    own = dataset_rows(dataset)
    given = set()
    for row in rows():
        path = (row.path or row.dial) if row.dataset == dataset else row.dial
        if path and row.given(args) is not None and (path not in own or own[path] == row.flag):
            given.add(path)
    return given


def set_workload(w, path: str, value, exact: bool = False):
    """The workload with one path (`workload.x` or `workload.side.x`) set; `exact`: a length made
    exactly `value` (a fixed distribution)."""
    from sim.workload import LengthSpec

    parts = path.removeprefix("workload.").split(".")
    if len(parts) == 2:
        side, name = parts
        spec = LengthSpec(mean=value) if exact and name == "mean" else replace(getattr(w, side), **{name: value})
        return replace(w, **{side: spec})
    return replace(w, **{parts[0]: value})


def apply_traffic(args: argparse.Namespace, w, dataset: str | None, skip=()):
    """The one rule from flags to a workload: each traffic row given sets its path; a dataset's own
    row sets it with that dataset (its default when not given; a length exactly). `skip`: paths a
    rule of `setup` sets instead (a trace's rate and count)."""
    for row in TRAFFIC_ROWS:
        path, value = row.path, row.given(args)
        if not path or path in skip:
            continue
        if row.dataset and row.dataset == dataset:
            w = set_workload(w, path, row.dataset_default if value is None else value, exact=True)
        elif value is not None and (not row.dataset or row.any_dataset):
            w = set_workload(w, path, value)
    return w
