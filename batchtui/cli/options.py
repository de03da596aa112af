"""The flags of the headless commands: value types, and the table of engine flags.

Every engine and deployment flag is one row of ENGINE_FLAGS (its dial, its `vllm serve` spelling,
its type and help), read by the parser, by the step that turns flags into a scenario, and by the
`vllm serve` line a plan prints. Messages name the accepted range; argparse adds the flag.
"""

from __future__ import annotations

import argparse
import math
import re
from dataclasses import dataclass, field

# -- value types -----------------------------------------------------------------------------------


def _whole(text: str, low: int, what: str, high: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


# A run is held in memory as arrays of this many requests at most (about 100 bytes each).
MAX_NUM_PROMPTS = 10_000_000


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    return _whole(text, 1, "a whole number >= 1")


def non_negative_int(text: str) -> int:
    """A whole number >= 0."""
    return _whole(text, 0, "a whole number >= 0")


def prompt_count(text: str) -> int:
    """--num-prompts: 1 to MAX_NUM_PROMPTS."""
    return _whole(text, 1, f"a whole number from 1 to {MAX_NUM_PROMPTS:,}", MAX_NUM_PROMPTS)


def seed(text: str) -> int:
    return _whole(text, 0, "a whole number from 0 to 2**63 - 1", 2**63 - 1)


def block_count(text: str) -> int:
    """num_gpu_blocks_override: at least 2 (one block is reserved)."""
    return _whole(text, 2, "a whole number of blocks >= 2 (one is reserved)", 2**40)


_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT]?)")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_int(text: str) -> int:
    """A whole number > 0 as vLLM reads --max-model-len: `32768`, `32k` (32,000) or `32K`
    (32,768); decimals only with a lower-case (decimal) suffix."""
    what = "a whole number of tokens > 0, such as 32768, 32k (32,000) or 32K (32,768)"
    match = _HUMAN_INT.fullmatch(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    number, suffix = match.groups()
    if suffix in _DECIMAL:
        value = int(float(number) * _DECIMAL[suffix])
    elif "." in number:
        raise argparse.ArgumentTypeError(f"expected {what} (decimals need k, m, g or t), got {text!r}")
    else:
        value = int(number) * _BINARY.get(suffix, 1)
    if not 0 < value <= 2**40:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


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


def range_ratio(text: str) -> float:
    """--random-range-ratio: [0, 1), as vLLM."""
    value = _float(text, "a ratio in [0, 1)")
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a ratio in [0, 1), got {text!r}")
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


def burstiness(text: str) -> float:
    """vllm bench serve's --burstiness: > 0 (1 = Poisson, inf = evenly spaced)."""
    what = "a burstiness > 0 (1 = Poisson, below 1 burstier, inf = evenly spaced)"
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
    from sim.profiles import MAX_BLOCK_SIZE

    value = _whole(text, 1, f"a power of two from 1 to {MAX_BLOCK_SIZE}")
    if value > MAX_BLOCK_SIZE or value & (value - 1):
        raise argparse.ArgumentTypeError(f"expected a power of two from 1 to {MAX_BLOCK_SIZE}, got {text!r}")
    return value


def _comma_list(item, what: str):
    def parse(text: str) -> list:
        parts = [p.strip() for p in text.split(",")]
        if not text.strip() or any(not p for p in parts):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list such as {what}, got {text!r}")
        if len(parts) > 1000:
            raise argparse.ArgumentTypeError(f"expected at most 1000 values, got {len(parts)}")
        values = [item(p) for p in parts]  # each item raises with its own range
        return sorted(set(values))
    return parse


rate_list = _comma_list(rate, "2,4,8,inf")
positive_int_list = _comma_list(positive_int, "16,64,256")

PERCENTILE_METRICS = ("ttft", "tpot", "itl", "e2el")


def metric_list(text: str) -> list[str]:
    """--percentile-metrics: a comma-separated subset of ttft, tpot, itl, e2el."""
    parts = [p.strip() for p in text.split(",")]
    bad = [p for p in parts if p not in PERCENTILE_METRICS]
    if not text.strip() or bad:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {', '.join(PERCENTILE_METRICS)}, got {text!r}")
    return list(dict.fromkeys(parts))


def percentile_list(text: str) -> list[float]:
    """--metric-percentiles: numbers in (0, 100], such as 50,90,99."""
    out = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not 0 < value <= 100:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of percentiles in (0, 100], such as 50,90,99, got {text!r}")
        out.append(value)
    return list(dict.fromkeys(out))


GOODPUT_METRICS = ("ttft", "tpot", "e2el")


def goodput_pair(text: str) -> tuple[str, float]:
    """One --goodput service level objective, KEY:MS, as vllm bench serve takes it."""
    name, sep, value = text.partition(":")
    try:
        ms = float(value)
    except ValueError:
        ms = math.nan
    if not sep or name not in GOODPUT_METRICS or not 0 <= ms < math.inf:
        raise argparse.ArgumentTypeError(
            f"expected KEY:MS with KEY one of {', '.join(GOODPUT_METRICS)} and MS >= 0, such as ttft:200, "
            f"got {text!r}")
    return name, ms


# -- names as vLLM and nvidia-smi spell them --------------------------------------------------------

# --kv-cache-dtype spellings vLLM takes, mapped to the profile's element types.
KV_CACHE_DTYPE_ALIASES = {"bfloat16": "bf16"}

AUTO_GPU = "auto"


def resolve_gpu(name: str, profiles) -> str:
    """A GPU profile id from an id, a profile name or an nvidia-smi name (the profiles'
    `nvidia_smi_names`; case, spacing and punctuation ignored), or `auto`: the GPU nvidia-smi
    reports, said on stderr in one line. Unknown names pass through for the profiles' own
    error."""
    if name in profiles.gpus:
        return name
    if name.strip().lower() == AUTO_GPU:
        return detect_gpu(profiles).profile_id
    from sim.detect import match_profile

    return match_profile(name, profiles) or name


def detect_gpu(profiles):
    """`--gpu auto`: ask nvidia-smi, say what it found (or why the lesson's GPU runs instead)."""
    import sys

    from sim.detect import detect

    detection = detect(profiles)
    print(f"batchtui: --gpu auto: {detection.notice()}", file=sys.stderr)
    return detection


def resolve_model(name: str, profiles) -> str:
    """A model profile id from an id or a Hugging Face id (case ignored)."""
    if name in profiles.models:
        return name
    wanted = name.lower()
    for model_id, model in profiles.models.items():
        if (model.hf_id and model.hf_id.lower() == wanted) or model_id.lower() == wanted:
            return model_id
    return name


# -- the engine and deployment flags ----------------------------------------------------------------


@dataclass(frozen=True)
class EngineFlag:
    """One `vllm serve` flag the simulator models."""

    dial: str
    """The scenario key (deployment) or EngineConfig dial (engine) it sets."""
    flag: str
    where: str
    """"deployment" (a Scenario field) or "engine" (an EngineConfig dial)."""
    kwargs: dict = field(default_factory=dict)
    vllm: bool = True
    """A `vllm serve` flag (False: the simulator's own, such as --batching)."""


def _tp_sizes():
    from sim.profiles import TENSOR_PARALLEL_SIZES
    return TENSOR_PARALLEL_SIZES


def _kv_dtypes():
    from sim.profiles import KV_CACHE_DTYPE_BYTES
    names = [n for n in KV_CACHE_DTYPE_BYTES if n != "bf16"]
    return tuple(names[:1] + list(KV_CACHE_DTYPE_ALIASES) + names[1:])


def engine_flags() -> tuple[EngineFlag, ...]:
    """The table (built on first use: some choices come from the simulator's profiles)."""
    return (
        EngineFlag("tensor_parallel_size", "--tensor-parallel-size", "deployment",
                   dict(type=int, choices=_tp_sizes(), metavar="N",
                        help="GPUs the model is split over: 1, 2, 4 or 8 (default 1)")),
        EngineFlag("kv_cache_dtype", "--kv-cache-dtype", "deployment",
                   dict(choices=_kv_dtypes(), metavar="DTYPE",
                        help=f"KV cache element type: {', '.join(_kv_dtypes())} (default auto: the "
                             "model's bfloat16)")),
        EngineFlag("gpu_memory_utilization", "--gpu-memory-utilization", "deployment",
                   dict(type=fraction, metavar="F", help="share of GPU memory vLLM may use, in (0, 1] "
                                                         "(default 0.92)")),
        EngineFlag("block_size", "--block-size", "deployment",
                   dict(type=block_size, metavar="N", help="tokens per KV cache block, a power of two "
                                                           "(default 16)")),
        EngineFlag("num_gpu_blocks_override", "--num-gpu-blocks-override", "deployment",
                   dict(type=block_count, metavar="N",
                        help="KV cache blocks, instead of sizing the cache from memory (at most what "
                             "memory holds)")),
        EngineFlag("batching", "--batching", "engine",
                   dict(choices=("sequential", "static", "dynamic", "continuous"),
                        help="batching policy (default continuous, as vLLM; dynamic for an encoder)"),
                   vllm=False),
        EngineFlag("max_num_seqs", "--max-num-seqs", "engine",
                   dict(type=positive_int, metavar="N",
                        help="most requests running at once (H100/H200/B200 1024, A100/L40S 256)")),
        EngineFlag("max_num_batched_tokens", "--max-num-batched-tokens", "engine",
                   dict(type=positive_int, metavar="N",
                        help="token budget per iteration (serve: H100/H200 8192, B200 16384, "
                             "A100/L40S 2048)")),
        EngineFlag("enable_chunked_prefill", "--enable-chunked-prefill", "engine",
                   dict(action=argparse.BooleanOptionalAction, default=None,
                        help="split long prompts over iterations (default on)")),
        EngineFlag("long_prefill_token_threshold", "--long-prefill-token-threshold", "engine",
                   dict(type=non_negative_int, metavar="N",
                        help="cap on one request's prefill chunk per iteration; 0 = off (default 0)")),
        EngineFlag("scheduling_policy", "--scheduling-policy", "engine",
                   dict(choices=("fcfs", "priority"), help="order of admission and preemption "
                                                           "(default fcfs)")),
        EngineFlag("max_model_len", "--max-model-len", "engine",
                   dict(type=human_int, metavar="N",
                        help="longest prompt + output, such as 32768 or 32k (default and maximum: "
                             "the model's context length; VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lifts the "
                             "maximum, as in vLLM)")),
        EngineFlag("max_batch_size", "--max-batch-size", "engine",
                   dict(type=positive_int, metavar="N",
                        help="batch size for static and dynamic batching (default 64)"), vllm=False),
        EngineFlag("max_queue_delay", "--max-queue-delay-ms", "engine",
                   dict(type=non_negative_float, metavar="MS",
                        help="dynamic batching: longest wait for a batch to fill (default 10)"),
                   vllm=False),
    )


def dest(flag: str) -> str:
    """The argparse attribute of a flag."""
    return flag.lstrip("-").replace("-", "_")
