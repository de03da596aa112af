"""Every setting a learner, a lesson or the command line can turn, in one table.

A dial is named by its dotted path into a scenario (`engine.max_num_seqs`,
`workload.request_rate`, `workload.input.mean`, `gpu_memory_utilization`). Its row says what
values it takes, how vLLM spells it on the command line (`vllm serve`, or `vllm bench serve` for
traffic; our own spelling where vLLM has none), and what moving it does to a live run:

- "iteration": an engine dial; it applies from the next iteration;
- "arrivals": traffic; it applies to arrivals not yet due (a finite workload is drawn again and
  the run restarts);
- "restart": hardware, model, seed or the engine's structure; the run starts over.

`DialSpec.coerce` is the one check of a value (a whole float is taken for an int, an int for a
float; booleans are never numbers); `set_value` returns a scenario with a dial set and checked
as a whole; `get_value` reads one (an engine dial left unset reads as the engine's resolved
value). The engine's `set_dial`, `Scenario.from_dict`, the lessons' dial checks and the app's
comparison all go through here; the command line can build its flags from `DIALS` (`flag`,
`flag_scale`, `parse`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from . import dial_paths
from .config import BATCHING_POLICIES, SCHEDULING_POLICIES
from .errors import ConfigError, spell_dials
from .profiles import KV_CACHE_DTYPE_BYTES, MAX_BLOCK_SIZE, TENSOR_PARALLEL_SIZES, WEIGHT_FORMATS
from .workload import ARRIVALS, DATASETS, LENGTH_DISTRIBUTIONS, RAMP_UP_STRATEGIES

if TYPE_CHECKING:
    from .scenario import Scenario

APPLIES = ("iteration", "arrivals", "restart")
TYPES = ("int", "float", "bool", "choice", "text")


@dataclass(frozen=True)
class DialSpec:
    path: str
    label: str
    type: str  # one of TYPES
    applies: str  # one of APPLIES
    flag: str = ""  # command-line spelling; vLLM's where `vllm` names the command that takes it
    vllm: str = ""  # "serve" (vllm serve), "bench" (vllm bench serve) or "" (ours alone)
    minimum: float | None = None
    maximum: float | None = None
    above: bool = False  # the minimum itself is excluded
    below: bool = False  # the maximum itself is excluded
    choices: tuple = ()
    unit: str = ""
    infinite: bool = False  # math.inf is a value (every request queued at once)
    optional: bool = False  # None is a value (unset)
    flag_scale: float = 1.0  # the flag's number is the dial's value times this (seconds -> ms)
    help: str = ""
    words: str = ""  # what it takes, in words, where the range alone says it badly
    human: bool = False  # also takes vLLM's human-readable spellings: 32k (32,000), 32K (32,768)

    @property
    def allowed(self) -> str:
        """The values it takes, in words."""
        if self.words:
            return self.words
        if self.type == "bool":
            return "true or false"
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.type == "text":
            return "a name"
        kind = "a whole number" if self.type == "int" else "a number"
        parts = []
        if self.minimum is not None:
            parts.append(f"{'>' if self.above else '>='} {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"{'<' if self.below else '<='} {self.maximum:g}")
        words = f"{kind} {' and '.join(parts)}".strip()
        if self.infinite:
            words += ", or inf"
        if self.optional:
            words += " (or unset)"
        return words

    def coerce(self, value: Any) -> Any:
        """The value as the scenario keeps it, or ConfigError naming the dial and what it takes."""
        if value is None and self.optional:
            return None
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            raise ConfigError(self.path, value, self.allowed)
        if self.type in ("choice", "text"):
            if isinstance(value, str) and (not self.choices or value in self.choices):
                return value
            if self.choices and value in self.choices:
                return value
            raise ConfigError(self.path, value, self.allowed)
        if self.infinite and value == "inf":  # how a scenario file writes it
            return math.inf
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise ConfigError(self.path, value, self.allowed)
        if math.isinf(value):
            if value > 0 and self.infinite:
                return math.inf
            raise ConfigError(self.path, value, self.allowed)
        if self.type == "int":
            if value != int(value):
                raise ConfigError(self.path, value, self.allowed)
            value = int(value)
        else:
            value = float(value)
        if self.choices and value not in self.choices:
            raise ConfigError(self.path, value, self.allowed)
        low, high = self.minimum, self.maximum
        if low is not None and (value < low or (self.above and value == low)):
            raise ConfigError(self.path, value, self.allowed)
        if high is not None and (value > high or (self.below and value == high)):
            raise ConfigError(self.path, value, self.allowed)
        return value

    def parse(self, text: str) -> Any:
        """A value typed on a command line, checked (the flag's unit: a `flag_scale` other than
        1 is divided out)."""
        return self.coerce(self.read(text))

    def read(self, text: str, flag_units: bool = True) -> Any:
        """The value `text` spells, unchecked against the range: on/off words for a bool, a name
        for a choice, None for an optional dial's "none", else a number (commas and
        underscores allowed, vLLM's 32k/32K where `human`), in the flag's unit if `flag_units`
        (the command line) else in the dial's own (the app's dial box). ConfigError if it spells
        none."""
        text = text.strip()
        if self.type == "bool":
            words = {"true": True, "on": True, "yes": True, "1": True,
                     "false": False, "off": False, "no": False, "0": False}
            if text.lower() not in words:
                raise ConfigError(self.path, text, self.allowed)
            return words[text.lower()]
        if self.type in ("choice", "text"):
            return text
        if self.optional and text.lower() in ("", "none", "unset"):
            return None
        number = human_number(text) if self.human else None
        if number is None:
            try:
                number = float(digits(text))
            except ValueError:
                raise ConfigError(self.path, text, self.allowed) from None
        if flag_units and self.flag_scale != 1.0 and math.isfinite(number):
            number = number / self.flag_scale
        if self.type == "int" and math.isfinite(number) and number == int(number):
            number = int(number)
        return number


def digits(text: str) -> str:
    """A number as typed, its thousands separators (commas, underscores: 16,384, 16_384) left
    out: how a dial reads a number, and a command line flag too (`batchtui.cli.options`)."""
    return text.strip().replace(",", "").replace("_", "")


_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_number(text: str) -> float | None:
    """A count with a suffix, as vLLM reads --max-model-len: 32k is 32,000 (decimal, lower case;
    decimals allowed), 32K is 32,768 (binary, upper case; whole numbers only); None without a
    suffix (or for a spelling that is not one)."""
    match = _HUMAN.fullmatch(text.strip())
    if not match:
        return None
    number, suffix = match.groups()
    if suffix in _DECIMAL:
        return float(int(float(number) * _DECIMAL[suffix]))
    if "." in number:
        return None
    return float(int(number) * _BINARY[suffix])


def _length_dials(side: str, flag_prefix: str = "", vllm: str = "") -> list[DialSpec]:
    """A length distribution's dials; with flags `--{flag_prefix}-...` where the command line has
    them (none for the batch pool's)."""
    what = ("batch " if side.startswith("batch") else "") + ("prompt" if "input" in side else "output")
    # vllm bench serve's random dataset names its lengths --random-input-len/--random-output-len
    mean_flag = f"--random-{flag_prefix}-len" if vllm else f"--{flag_prefix}-len"

    def flag(name: str) -> str:
        return name if flag_prefix else ""

    return [
        DialSpec(f"workload.{side}.dist", f"{what} length distribution", "choice", "arrivals",
                 flag(f"--{flag_prefix}-dist"), choices=LENGTH_DISTRIBUTIONS,
                 help=f"how {what} lengths vary: fixed, uniform, lognormal or mixed"),
        DialSpec(f"workload.{side}.mean", f"{what} length", "int", "arrivals", flag(mean_flag), vllm,
                 minimum=1, unit="tokens", help=f"{what} tokens (the median for lognormal)"),
        DialSpec(f"workload.{side}.low", f"shortest {what}", "int", "arrivals", flag(f"--{flag_prefix}-len-min"),
                 minimum=1, unit="tokens"),
        DialSpec(f"workload.{side}.high", f"longest {what}", "int", "arrivals", flag(f"--{flag_prefix}-len-max"),
                 minimum=0, unit="tokens", help="0: no upper clip"),
        DialSpec(f"workload.{side}.sigma", f"{what} length spread", "float", "arrivals",
                 flag(f"--{flag_prefix}-sigma"), minimum=0, help="lognormal shape"),
        DialSpec(f"workload.{side}.long_len", f"long {what} length", "int", "arrivals", minimum=1,
                 unit="tokens", help="mixed: the occasional long length"),
        DialSpec(f"workload.{side}.long_share", f"share of long {what}s", "float", "arrivals",
                 minimum=0, maximum=1, help="mixed: how often the long length comes"),
    ]


DIALS: tuple[DialSpec, ...] = (
    # -- hardware and model: the run starts over
    DialSpec("gpu", "GPU", "text", "restart", "--gpu", help="a GPU profile id"),
    DialSpec("model", "model", "text", "restart", "--model", help="a model profile id"),
    DialSpec("tensor_parallel_size", "GPUs (tensor parallel)", "int", "restart", "--tensor-parallel-size",
             "serve", choices=TENSOR_PARALLEL_SIZES, help="GPUs the model is split over: 1, 2, 4 or 8 (default 1)"),
    DialSpec("kv_cache_dtype", "KV cache dtype", "choice", "restart", "--kv-cache-dtype", "serve",
             choices=tuple(KV_CACHE_DTYPE_BYTES), help="KV cache element type (default auto: the model's bfloat16)"),
    DialSpec("gpu_memory_utilization", "GPU memory share", "float", "restart", "--gpu-memory-utilization",
             "serve", minimum=0, maximum=1, above=True, words="a fraction in (0, 1]",
             help="share of GPU memory vLLM may use, in (0, 1] (default 0.92)"),
    DialSpec("block_size", "KV block size", "int", "restart", "--block-size", "serve", unit="tokens",
             choices=tuple(2**i for i in range(MAX_BLOCK_SIZE.bit_length()) if 2**i <= MAX_BLOCK_SIZE),
             words=f"a power of two from 1 to {MAX_BLOCK_SIZE}",
             help="tokens per KV cache block, a power of two (default 16)"),
    DialSpec("num_gpu_blocks_override", "KV blocks", "int", "restart", "--num-gpu-blocks-override", "serve",
             minimum=2, optional=True, unit="blocks",
             words="a whole number of blocks >= 2 (one is reserved), or unset: sized from memory",
             help="KV cache blocks, instead of sizing the cache from memory (at most what memory holds)"),
    DialSpec("quantization", "weight format", "choice", "restart", "--quantization", "serve",
             choices=tuple(WEIGHT_FORMATS), optional=True,
             help="weight format of the linear layers: bytes per weight, and fp8 tensor cores for fp8 "
                  "formats where the GPU has them (default: the model's bf16)"),
    DialSpec("kv_cache_memory_bytes", "KV cache bytes", "int", "restart", "--kv-cache-memory-bytes", "serve",
             minimum=1, optional=True, human=True, unit="bytes",
             words="a number of bytes > 0 (1k = 1,000, 1K = 1,024, as vLLM reads them), or unset",
             help="the KV cache per GPU in bytes, instead of sizing it with {gpu_memory_utilization}"),
    DialSpec("enforce_eager", "no CUDA graphs", "bool", "restart", "--enforce-eager", "serve", optional=True,
             help="run without CUDA graphs: every iteration pays the host's kernel launches (default off)"),
    DialSpec("speculative_config", "speculative decoding", "text", "restart", "--speculative-config", "serve",
             optional=True,
             words="a JSON object of vLLM's speculative config (method, model, num_speculative_tokens...), or unset",
             help='speculative decoding, as vLLM spells it: {"method": eagle3, eagle, mtp, ngram or draft_model, '
                  '"model": the draft head or model, "num_speculative_tokens": K}; acceptance per draft position '
                  'from published vLLM runs, or your own with "rejection_sample_method": "synthetic" and '
                  '"synthetic_acceptance_rates" (default: off)'),
    DialSpec("enable_expert_parallel", "expert parallel", "bool", "restart", "--enable-expert-parallel", "serve",
             optional=True,
             help="a mixture of experts' routed experts placed whole on the GPUs (EP = TP) instead of a slice of "
                  "every one on each (default off)"),
    DialSpec("seed", "random seed", "int", "restart", "--seed", "serve", minimum=0,
             help="random seed (default 0)"),
    # -- the engine: from the next iteration (its structure restarts the run)
    DialSpec("engine.batching", "batching", "choice", "restart", "--batching", choices=BATCHING_POLICIES,
             help="batching policy (default continuous, as vLLM; dynamic for an encoder)"),
    DialSpec("engine.max_num_seqs", "seats", "int", "iteration", "--max-num-seqs", "serve", minimum=1,
             help="most requests running at once (H100/H200/B200 1024, A100/L40S 256)"),
    DialSpec("engine.max_num_active_seqs", "active seats", "int", "iteration", "--max-num-active-seqs", "serve",
             minimum=1, optional=True, words="a whole number of requests > 0 (at most {engine.max_num_seqs}), or unset",
             help="most requests admitted to run at once, at most {engine.max_num_seqs} (which still sizes vLLM's "
                  "runner; vLLM 0.33; default: {engine.max_num_seqs})"),
    DialSpec("engine.max_num_batched_tokens", "token budget", "int", "iteration", "--max-num-batched-tokens",
             "serve", minimum=1, unit="tokens", human=True,
             words="a whole number of tokens > 0, such as 8192 or 8K (8,192; 8k is 8,000, as vLLM reads them)",
             help="token budget per iteration (serve: H100/H200 8192, B200 16384, A100/L40S 2048)"),
    DialSpec("engine.max_num_scheduled_tokens", "scheduled-token cap", "int", "iteration",
             "--max-num-scheduled-tokens", "serve", minimum=1, optional=True, unit="tokens", human=True,
             words="a whole number of tokens > 0 (8K = 8,192, 8k = 8,000, as vLLM reads them), or unset: "
                   "the token budget",
             help="tokens the scheduler may issue in one iteration, within the token budget (vLLM 0.33; "
                  "default: the token budget)"),
    DialSpec("engine.enable_chunked_prefill", "chunked prefill", "bool", "iteration", "--enable-chunked-prefill",
             "serve", help="split long prompts over iterations (default on)"),
    DialSpec("engine.long_prefill_token_threshold", "long-prefill cap", "int", "iteration",
             "--long-prefill-token-threshold", "serve", minimum=0, unit="tokens",
             help="cap on one request's prefill chunk per iteration; 0 = off (default 0)"),
    DialSpec("engine.long_prefill_token_threshold_adaptive", "adaptive long-prefill cap", "bool", "iteration",
             "--long-prefill-token-threshold-adaptive", "serve",
             help="floor the long-prefill cap at the token budget shared by the running and waiting "
                  "requests (vLLM 0.33; default off)"),
    DialSpec("engine.scheduling_policy", "scheduling policy", "choice", "iteration", "--scheduling-policy",
             "serve", choices=SCHEDULING_POLICIES, help="order of admission and preemption (default fcfs)"),
    DialSpec("engine.max_model_len", "max model length", "int", "iteration", "--max-model-len", "serve",
             minimum=1, unit="tokens", human=True,
             words="a whole number of tokens > 0, such as 32768, 32k (32,000) or 32K (32,768)",
             help="longest prompt + output, such as 32768 or 32k (default and maximum: the model's context "
                  "length; VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lifts the maximum, as in vLLM)"),
    DialSpec("engine.watermark", "KV watermark", "float", "iteration", "--watermark", "serve", minimum=0,
             maximum=1, below=True,
             help="share of the KV blocks kept free when admitting waiting or preempted requests beside "
                  "others, in [0, 1) (default 0)"),
    DialSpec("engine.scheduler_reserve_full_isl", "admit whole prompts", "bool", "iteration",
             "--scheduler-reserve-full-isl", "serve",
             help="admit a request only if its whole prompt's blocks are free (default on)"),
    DialSpec("engine.async_scheduling", "async scheduling", "bool", "restart", "--async-scheduling", "serve",
             help="schedule the next batch while this one runs, overlapping the host's work with the GPU's "
                  "(default on, as in vLLM 0.33; continuous batching only)"),
    DialSpec("engine.enable_prefix_caching", "prefix caching", "bool", "restart", "--enable-prefix-caching",
             "serve", help="reuse the KV of full blocks of a prompt prefix computed before (default on, as vLLM)"),
    DialSpec("engine.api_server_count", "API servers", "int", "restart", "--api-server-count", "serve", minimum=0,
             words="a whole number of processes >= 0 (0: none in front, as vLLM's offline LLM class)",
             help="API server processes in front of the engine (default 1, as vLLM): each tokenizes its share of "
                  "the requests and streams its share of the tokens, one job at a time; 0: none (an offline run)"),
    DialSpec("engine.max_batch_size", "batch size", "int", "iteration", "--max-batch-size", minimum=1,
             help="batch size for static and dynamic batching (default 64)"),
    DialSpec("engine.max_queue_delay", "batching wait", "float", "iteration", "--max-queue-delay-ms",
             minimum=0, unit="s", flag_scale=1000.0,
             help="dynamic batching: longest wait for a batch to fill, ms (default 10)"),
    # -- traffic: arrivals from now on
    DialSpec("workload.arrival", "arrivals", "choice", "arrivals", "--arrival", choices=ARRIVALS),
    DialSpec("workload.request_rate", "request rate", "float", "arrivals", "--request-rate", "bench",
             minimum=0, above=True, infinite=True, unit="req/s", help="inf: every request at once"),
    DialSpec("workload.num_prompts", "requests", "int", "arrivals", "--num-prompts", "bench", minimum=0,
             help="0: endless"),
    DialSpec("workload.max_concurrency", "client concurrency cap", "int", "restart", "--max-concurrency",
             "bench", minimum=0, help="requests in flight at most; 0: no cap"),
    DialSpec("workload.burst_size", "burst size", "int", "arrivals", "--burst-size", minimum=1),
    DialSpec("workload.trace_path", "trace file", "text", "arrivals", "--workload"),
    DialSpec("workload.pool", "pool", "text", "arrivals"),
    DialSpec("workload.batch_pool_share", "batch pool share", "float", "arrivals", minimum=0, maximum=1),
    DialSpec("workload.burstiness", "burstiness", "float", "arrivals", "--burstiness", "bench", minimum=0,
             above=True, infinite=True, help="gamma arrivals' shape: 1 = Poisson, below 1 burstier, inf = even"),
    DialSpec("workload.ramp_up_strategy", "ramp-up", "choice", "arrivals", "--ramp-up-strategy", "bench",
             choices=RAMP_UP_STRATEGIES, help="the rate climbs from the start to the end rate over the run"),
    DialSpec("workload.ramp_up_start_rps", "ramp-up start rate", "float", "arrivals", "--ramp-up-start-rps",
             "bench", minimum=0, unit="req/s"),
    DialSpec("workload.ramp_up_end_rps", "ramp-up end rate", "float", "arrivals", "--ramp-up-end-rps", "bench",
             minimum=0, unit="req/s"),
    DialSpec("workload.dataset", "dataset", "choice", "arrivals", "--dataset-name", "bench", choices=DATASETS),
    DialSpec("workload.dataset_path", "dataset file", "text", "arrivals", "--dataset-path", "bench"),
    DialSpec("workload.dataset_output_len", "dataset output length", "int", "arrivals", "--sharegpt-output-len",
             "bench", minimum=0, help="0: the file's own output lengths"),
    DialSpec("workload.trace_rate", "trace rate", "float", "arrivals", minimum=0,
             help="a trace replayed at this mean rate; 0: its own timing"),
    DialSpec("workload.trace_requests", "trace requests", "int", "arrivals", minimum=0,
             help="a trace cut or repeated to this many requests; 0: once, whole"),
    DialSpec("workload.prefix_len", "shared prefix", "int", "arrivals", "--random-prefix-len", "bench", minimum=0,
             unit="tokens", help="tokens of a prefix (a system prompt) shared before every prompt; 0: none"),
    DialSpec("workload.num_prefixes", "distinct prefixes", "int", "arrivals", "--prefix-repetition-num-prefixes",
             "bench", minimum=1, help="how many different shared prefixes; each request uses one at random"),
    DialSpec("workload.turns", "turns per conversation", "int", "arrivals", "--turns", minimum=1,
             help="turns per conversation: the next prompt is the previous one, its answer and a new "
                  "question ({workload.num_prompts} counts conversations)"),
    DialSpec("workload.think_time", "think time", "float", "arrivals", "--think-time", minimum=0, unit="s",
             help="seconds between an answer's last token and the next turn's question"),
    DialSpec("workload.client_request_s", "client work a request", "float", "arrivals", "--client-request-ms",
             minimum=0, unit="s", flag_scale=1000.0,
             help="the client's own work on each request before it is sent, ms on average (each request's "
                  "drawn around it, as LiteLLM's calls vary), on the one core its threads "
                  "share, one thread a request in flight, taking turns (default 0: a free client, as vllm bench "
                  "serve's is taken)"),
    DialSpec("workload.client_token_s", "client work a token", "float", "arrivals", "--client-token-ms",
             minimum=0, unit="s", flag_scale=1000.0,
             help="the client's own work on each streamed token (reading and parsing its event), ms, by the "
                  "request's thread in its turn (default 0)"),
    DialSpec("workload.hash_block_size", "trace hash block", "int", "arrivals", "--timed-trace-chunk-hash-size",
             "bench", minimum=1, unit="tokens",
             help="prompt tokens per hash id of a timed trace (default 16, as vllm bench serve; Mooncake's traces: 512)"),
    DialSpec("workload.self_timed", "trace self-timed", "bool", "arrivals",
             help="a timed trace at its own timing sends its first requests lines (0: 1,000) once, as vllm "
                  "bench serve --self-timed sends it"),
    DialSpec("workload.trace_sec_multiplier", "trace time unit", "float", "arrivals", "--timed-trace-sec-multiplier",
             "bench", minimum=0, above=True, unit="s",
             help="seconds per unit of a timed trace's timestamps (default 1, as vllm bench serve; 0.001 for "
                  "milliseconds, Mooncake's traces)"),
    *_length_dials("input", "input", "bench"),
    *_length_dials("output", "output", "bench"),
    *_length_dials("batch_input"),
    *_length_dials("batch_output"),
)

BY_PATH: dict[str, DialSpec] = {d.path: d for d in DIALS}
dial_paths.declare(BY_PATH)  # what a message's `{path}` may name (sim.errors spells them)


def flag_of(path: str) -> str | None:
    """The command line's spelling of a dial: its flag, or None for a dial without one (and for
    a name that is no dial). Faces that speak vLLM's words (the CLI, the served API) spell a
    `SimError`'s dials with it."""
    spec = BY_PATH.get(path)
    return spec.flag or None if spec is not None else None


def spelled(text: str, spell=None) -> str:
    """Text that names dials as `{path}` (a dial's help or `words`, a message) with each spelled
    by `spell(path)`: the command line passes `flag_of`, the app the dial's label; a dial `spell`
    has no name for, and every dial without `spell`, keeps its path."""
    return spell_dials(text, spell)


def label_of(path: str) -> str | None:
    """The app's name for a dial (its label), None for a name that is no dial."""
    spec = BY_PATH.get(path)
    return spec.label if spec is not None else None


def find(path: str) -> DialSpec:
    """The dial at a dotted path, or ConfigError listing the kinds of path there are."""
    try:
        return BY_PATH[path]
    except (KeyError, TypeError):
        raise ConfigError("dial", path, "a dial path such as engine.max_num_seqs, workload.request_rate "
                                        "or gpu_memory_utilization") from None


def get_value(scenario: Scenario, path: str, profiles=None) -> Any:
    """A dial's value in a scenario; an engine dial the scenario leaves unset reads as the
    engine's resolved value (vLLM's default for the GPU)."""
    find(path)
    head, _, rest = path.partition(".")
    if head == "engine":
        if rest in scenario.engine:
            return scenario.engine[rest]
        return getattr(scenario.engine_config(profiles), rest)
    if head == "workload":
        value: Any = scenario.workload
        for part in rest.split("."):
            value = getattr(value, part)
        return value
    return getattr(scenario, head)


def set_value(scenario: Scenario, path: str, value: Any, profiles=None) -> Scenario:
    """The scenario with one dial set, checked as a whole (ConfigError if refused)."""
    spec = find(path)
    value = spec.coerce(value)
    head, _, rest = path.partition(".")
    if head == "engine":
        new = scenario.with_engine(**{rest: value})
        new.engine_config(profiles)
    elif head == "workload":
        parts = rest.split(".")
        workload = scenario.workload
        if len(parts) == 2:
            workload = replace(workload, **{parts[0]: replace(getattr(workload, parts[0]), **{parts[1]: value})})
        else:
            workload = replace(workload, **{rest: value})
        workload.validate()
        new = replace(scenario, workload=workload)
    else:
        new = replace(scenario, **{head: value})
        new.deployment(profiles)
        new.engine_config(profiles)
    return new


def paths_in(data: dict, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted path, value) for every leaf of a scenario dict (or part of one)."""
    out = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out += paths_in(value, path + ".")
        else:
            out.append((path, value))
    return out


def differing(a: Scenario, b: Scenario) -> set[str]:
    """Dials whose values differ between two scenarios (engine dials as each sets them)."""
    da, db = dict(paths_in(a.to_dict())), dict(paths_in(b.to_dict()))
    return {path for path in set(da) | set(db) if path in BY_PATH and da.get(path) != db.get(path)}
