"""Traffic: when requests arrive and how long they are.

Every draw comes from the generator handed in (owned by the engine, seeded per scenario), so a
workload is reproducible. Times are seconds from the start of the run.

Arrivals: `poisson`, `constant`, `bursts`, `all-at-once`, `gamma` (as `vllm bench serve` draws
them: gamma gaps of shape `burstiness`, rescaled so the last request arrives at N / rate, or a
linear or exponential ramp-up) and `trace` (a file, optionally rescaled to a rate and repeated to
a length). Lengths: the `input`/`output` distributions (vLLM's "random" dataset is a uniform one)
or a ShareGPT or custom dataset file, read with `vllm bench serve`'s filtering rules.

What prompts share, for prefix caching, travels as each request's `prompt_segments` (ordered
(name, length) pairs; a token is its segment's name and its position in it, so prompts that
start with the same segments share exactly those tokens), never as token lists:

- a shared prefix (`prefix_len` tokens, vLLM's `--random-prefix-len`) before every prompt, one of
  `num_prefixes` (a system prompt per tenant or per task), segment `prefix-<g>`;
- conversations of `turns` turns: the first turn is drawn like any request (its question is the
  segment `<id>/q1`); when its answer has finished, the next turn is sent `think_time` seconds
  later with the previous prompt, the answer (`<id>/a1`) and a new question (`<id>/q2`) drawn
  from the same length distributions (`sim.arrivals` sends it: it depends on when the answer ends);
- a trace's `hash_ids`: one segment `h<id>` per block of `hash_block_size` prompt tokens (16,
  vLLM's `--timed-trace-chunk-hash-size`; Mooncake's traces use 512), a last partial one
  `h<id>:<n>` (vLLM draws a partial block's tokens apart from the full one's).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import deque
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError, WorkloadError
from .reports import BATCH_POOL

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where traffic is drawn, not at import: a scenario can be read, checked and
# shown (the tutorial's first frame) without paying for numpy's import.

ARRIVALS = ("poisson", "constant", "bursts", "all-at-once", "gamma", "trace")
LENGTH_DISTRIBUTIONS = ("fixed", "uniform", "lognormal", "mixed")
DATASETS = ("random", "sharegpt", "custom")
RAMP_UP_STRATEGIES = ("", "linear", "exponential")
# A trace spans at most this long (about 116 days): beyond it a float clock loses the
# sub-microsecond resolution an iteration needs, and such a time is a mistake in the file.
MAX_TRACE_SECONDS = 1e7
# vLLM 0.33's timed traces (`vllm bench serve --dataset-name timed_trace`): one hash id per block
# of this many prompt tokens (`--timed-trace-chunk-hash-size`, default 16, the Qwen/Alibaba
# traces' block) and timestamps times this many seconds (`--timed-trace-sec-multiplier`, default
# 1). Source: vllm/benchmarks/datasets/datasets.py, `add_dataset_parser` and `TimedTrace`.
VLLM_TRACE_BLOCK_TOKENS = 16
VLLM_TRACE_SEC_MULTIPLIER = 1.0
# vllm bench serve's --num-prompts default (vllm/benchmarks/datasets/datasets.py, DEFAULT_NUM_PROMPTS):
# how many lines of a timed trace it sends when not told.
VLLM_NUM_PROMPTS = 1000
# Mooncake's traces (FAST'25, github.com/kvcache-ai/Mooncake): 512-token blocks, milliseconds;
# vLLM replays them with --timed-trace-chunk-hash-size 512 --timed-trace-sec-multiplier 0.001
# (its help: "in the Moonshot traces it is 512"), `--dataset-name mooncake_trace` here.
MOONCAKE_BLOCK_TOKENS = 512
MOONCAKE_SEC_MULTIPLIER = 0.001
# A timed trace's fields (vLLM's --timed-trace-label-* defaults).
TIMED_FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
PREFIX_SEGMENT = "prefix-{}"  # the name of shared prefix g's segment


def answer_segment(conversation: str, turn: int) -> str:
    """The name of a conversation's answer to turn `turn`, as a segment of later prompts."""
    return f"{conversation}/a{turn}"


def _slot_setting_init(cls):
    """Give a frozen, slotted dataclass an `__init__` with the same parameters and defaults (read
    from its fields) that sets each slot through the slot's own descriptor, not through
    `object.__setattr__` as the generated one does: about half the cost, and a RequestSpec is
    made for every request that arrives. Its instances stay frozen (assignment still raises)."""
    params, lines, namespace = [], [], {}
    for f in fields(cls):
        if f.default_factory is not MISSING or not f.init or f.kw_only:
            raise TypeError(f"{cls.__name__}.{f.name}: only plain fields are supported")
        if f.default is MISSING:
            params.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        namespace[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        lines.append(f"    _set_{f.name}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(lines), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init
    return cls


@_slot_setting_init
@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One request as the workload produces it (before the engine owns it)."""

    request_id: str
    arrival_time: float
    prompt_len: int
    output_len: int
    priority: int = 0
    pool: str = "chat"
    hash_ids: tuple[int, ...] = ()
    """Prefix-block ids from a timed trace (one per `hash_block_size` prompt tokens), as the file
    gives them; `prompt_segments` carries what they mean to the prefix cache."""
    prompt_segments: tuple[tuple[str, int], ...] | None = None
    """The prompt's identity for prefix caching: (name, length) segments adding up to
    `prompt_len`; None: one segment named after the request (nothing shared)."""
    turn: int = 1
    """Its turn in a conversation of `WorkloadSpec.turns` turns (1: the first, or a single turn)."""
    conversation: str = ""
    """The conversation's id (its first request's id) when it has more than one turn."""
    client_queue_time: float = 0.0
    """Seconds it waited at the client for a free slot under `max_concurrency` before it was
    sent at `arrival_time` (vLLM bench's `client_queue_time`)."""

    @property
    def output_segment(self) -> str | None:
        """The name of its answer as a segment of the next turn's prompt (`<conversation>/a<turn>`)
        when it is a conversation's turn, else None (an output no prompt repeats)."""
        return answer_segment(self.conversation, self.turn) if self.conversation else None


_SPEC_DEFAULTS = {f.name: f.default for f in fields(RequestSpec) if f.default is not MISSING}
"""RequestSpec's defaults, read off its fields (a drawn request's priority, hash ids and turn)."""

_POSITIONAL_FIELDS = ("request_id", "arrival_time", "prompt_len", "output_len", "priority", "pool", "hash_ids",
                      "prompt_segments", "turn", "conversation")
"""The fields `RequestQueue._make` passes by position, in the order it passes them (one RequestSpec is
made for every request, and keywords cost more): checked against the dataclass's own order when the
module loads, so a reordered or inserted field stops the import instead of filling the wrong field."""


def check_positional_fields(cls: type) -> None:
    """Raise TypeError unless `cls`'s fields begin with `_POSITIONAL_FIELDS`, in that order."""
    if tuple(f.name for f in fields(cls))[:len(_POSITIONAL_FIELDS)] != _POSITIONAL_FIELDS:
        raise TypeError(f"{cls.__name__}'s fields no longer begin {_POSITIONAL_FIELDS}: RequestQueue._make "
                        "passes them by position")


check_positional_fields(RequestSpec)


@dataclass(frozen=True, slots=True)
class LengthSpec:
    """A distribution of token counts.

    fixed: always `mean`; uniform: integers in [low, high]; lognormal: median `mean` with shape
    `sigma`, clipped to [low, high]; mixed: `mean` most of the time and `long_len` with
    probability `long_share` (occasional very long prompts, for instance).
    """

    dist: str = "fixed"
    mean: int = 512
    low: int = 1
    high: int = 0  # 0 = no upper clip (uniform needs one: defaults to 2 × mean − low)
    sigma: float = 0.5
    long_len: int = 16384
    long_share: float = 0.0

    def validate(self, name: str) -> None:
        if self.dist not in LENGTH_DISTRIBUTIONS:
            raise ConfigError(f"workload.{name}.dist", self.dist, "one of " + ", ".join(LENGTH_DISTRIBUTIONS))
        if self.mean <= 0:
            raise ConfigError(f"workload.{name}.mean", self.mean, "a whole number of tokens > 0")
        if self.low <= 0:
            raise ConfigError(f"workload.{name}.low", self.low, "a whole number of tokens > 0")
        if self.high and self.high < self.low:
            raise ConfigError(f"workload.{name}.high", self.high, f"at least {{workload.{name}.low}} ({self.low})")
        if self.sigma < 0:
            raise ConfigError(f"workload.{name}.sigma", self.sigma, "a shape >= 0")
        if not 0.0 <= self.long_share <= 1.0:
            raise ConfigError(f"workload.{name}.long_share", self.long_share, "a share between 0 and 1")
        if self.dist == "mixed" and self.long_len <= 0:
            raise ConfigError(f"workload.{name}.long_len", self.long_len, "a whole number of tokens > 0")

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        import numpy as np

        if self.dist == "fixed":
            return np.full(n, self.mean, dtype=np.int64)
        if self.dist == "uniform":
            high = self.high or max(self.low, 2 * self.mean - self.low)
            return rng.integers(self.low, high + 1, size=n, dtype=np.int64)
        if self.dist == "lognormal":
            values = np.rint(self.mean * np.exp(self.sigma * rng.standard_normal(n))).astype(np.int64)
            return np.clip(values, self.low, self.high or np.iinfo(np.int64).max)
        # mixed
        longs = rng.random(n) < self.long_share
        return np.where(longs, self.long_len, self.mean).astype(np.int64)


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """The traffic of one scenario."""

    arrival: str = "poisson"
    request_rate: float = 4.0  # requests/s; math.inf queues everything at once
    num_prompts: int = 1000  # 0 = endless (the live app keeps generating)
    input: LengthSpec = field(default_factory=lambda: LengthSpec(mean=512))
    output: LengthSpec = field(default_factory=lambda: LengthSpec(mean=256))
    burst_size: int = 16  # bursts: requests per burst, bursts spaced to keep request_rate
    trace_path: str = ""
    pool: str = "chat"
    # Optional second pool mixed in (reading percentiles per pool): share of requests and lengths.
    batch_pool_share: float = 0.0
    batch_input: LengthSpec = field(default_factory=lambda: LengthSpec(mean=2048))
    batch_output: LengthSpec = field(default_factory=lambda: LengthSpec(mean=512))
    # vllm bench serve's arrival process (arrival "gamma"): gap shape (1 = Poisson, inf = evenly
    # spaced) and an optional ramp of the rate from start to end over the run.
    burstiness: float = 1.0
    ramp_up_strategy: str = ""
    ramp_up_start_rps: float = 0.0
    ramp_up_end_rps: float = 0.0
    # vllm bench serve's --max-concurrency: requests the client keeps in flight at most (0 = no cap).
    max_concurrency: int = 0
    # The client's own work (sim.frontend), in seconds: on each request before it is sent, and on
    # each streamed token it reads; 0 = a client taken as free (vllm bench serve's, by default).
    client_request_s: float = 0.0
    client_token_s: float = 0.0
    # Lengths from a dataset file instead of `input`/`output`: "sharegpt" (JSON) or "custom"
    # (JSON Lines of {"prompt": ...}); `dataset_output_len` > 0 replaces the file's output lengths.
    dataset: str = "random"
    dataset_path: str = ""
    dataset_output_len: int = 0
    # A trace replayed at another mean rate (0 = its own timing) and length (0 = once, whole).
    trace_rate: float = 0.0
    trace_requests: int = 0
    # Shared prefixes: `prefix_len` tokens before every prompt (vLLM's --random-prefix-len),
    # one of `num_prefixes` drawn at random per request (or conversation).
    prefix_len: int = 0
    num_prefixes: int = 1
    # Conversations: `turns` turns each (`num_prompts` counts conversations), the next turn sent
    # `think_time` seconds after the previous answer's last token.
    turns: int = 1
    think_time: float = 0.0
    # A timed trace's hash_ids: one per block of this many prompt tokens; its timestamps: times
    # this many seconds (vLLM's defaults: 16 tokens, seconds; Mooncake's traces: 512, ms).
    hash_block_size: int = VLLM_TRACE_BLOCK_TOKENS
    trace_sec_multiplier: float = VLLM_TRACE_SEC_MULTIPLIER
    # vllm bench serve's --self-timed (on for its timed_trace dataset): a trace in vLLM's timed
    # layout at its own timing sends its first `trace_requests` lines (0: vLLM's 1,000), never
    # repeated. A `trace_rate` (a sweep's, a plan's) rescales and repeats it all the same.
    self_timed: bool = False

    def validate(self) -> None:
        if self.arrival not in ARRIVALS:
            raise ConfigError("workload.arrival", self.arrival, "one of " + ", ".join(ARRIVALS))
        if not (self.request_rate > 0):  # also rejects NaN
            raise ConfigError("workload.request_rate", self.request_rate, "requests/s > 0, or inf")
        if _not_whole(self.num_prompts) or self.num_prompts < 0:
            raise ConfigError("workload.num_prompts", self.num_prompts, "a whole number >= 0")
        if _not_whole(self.burst_size) or self.burst_size <= 0:
            raise ConfigError("workload.burst_size", self.burst_size, "a whole number > 0")
        if self.arrival == "trace" and not self.trace_path:
            raise ConfigError("workload.trace_path", self.trace_path, "a JSON Lines trace file for {workload.arrival} trace")
        if not 0.0 <= self.batch_pool_share <= 1.0:
            raise ConfigError("workload.batch_pool_share", self.batch_pool_share, "a share between 0 and 1")
        if not self.burstiness > 0:
            raise ConfigError("workload.burstiness", self.burstiness, "a number > 0 (1 = Poisson, inf = evenly spaced)")
        if self.ramp_up_strategy not in RAMP_UP_STRATEGIES:
            raise ConfigError("workload.ramp_up_strategy", self.ramp_up_strategy, "linear or exponential")
        if self.ramp_up_strategy:
            if not (0 < self.ramp_up_start_rps < math.inf):
                raise ConfigError("workload.ramp_up_start_rps", self.ramp_up_start_rps, "requests/s > 0")
            if not (self.ramp_up_start_rps <= self.ramp_up_end_rps < math.inf):
                raise ConfigError("workload.ramp_up_end_rps", self.ramp_up_end_rps,
                                  f"requests/s, at least the start rate ({self.ramp_up_start_rps:g})")
        if _not_whole(self.max_concurrency) or self.max_concurrency < 0:
            raise ConfigError("workload.max_concurrency", self.max_concurrency, "a whole number >= 0 (0 = no cap)")
        for name in ("client_request_s", "client_token_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ConfigError(f"workload.{name}", value, "seconds >= 0 (0: the client is taken as free)")
        if (self.num_prompts == 0 and self.request_rate == math.inf and not self.max_concurrency
                and self.arrival not in ("trace", "all-at-once")):
            # Endless traffic all arriving at once would be endless requests at one instant.
            raise ConfigError("workload.request_rate", self.request_rate,
                              "a finite rate for endless traffic ({workload.num_prompts} 0), or a {workload.max_concurrency} cap",
                              "with no end and no rate, every request of the stream would arrive at the same instant")
        if self.dataset not in DATASETS:
            raise ConfigError("workload.dataset", self.dataset, "one of " + ", ".join(DATASETS))
        if self.dataset != "random" and not self.dataset_path:
            raise ConfigError("workload.dataset_path", self.dataset_path, f"a file for the {self.dataset} dataset")
        if _not_whole(self.dataset_output_len) or self.dataset_output_len < 0:
            raise ConfigError("workload.dataset_output_len", self.dataset_output_len, "a whole number of tokens >= 0")
        if not (0 <= self.trace_rate):
            raise ConfigError("workload.trace_rate", self.trace_rate, "requests/s >= 0 (0 = the trace's own timing)")
        if _not_whole(self.trace_requests) or self.trace_requests < 0:
            raise ConfigError("workload.trace_requests", self.trace_requests, "a whole number >= 0 (0 = the whole trace)")
        if _not_whole(self.prefix_len) or self.prefix_len < 0:
            raise ConfigError("workload.prefix_len", self.prefix_len, "a whole number of tokens >= 0 (0 = no shared prefix)")
        if _not_whole(self.num_prefixes) or self.num_prefixes < 1:
            raise ConfigError("workload.num_prefixes", self.num_prefixes, "a whole number >= 1")
        if _not_whole(self.turns) or self.turns < 1:
            raise ConfigError("workload.turns", self.turns, "a whole number of turns >= 1")
        if isinstance(self.think_time, bool) or not isinstance(self.think_time, (int, float)) \
                or not 0 <= self.think_time < math.inf:
            raise ConfigError("workload.think_time", self.think_time, "seconds >= 0")
        if _not_whole(self.hash_block_size) or self.hash_block_size < 1:
            raise ConfigError("workload.hash_block_size", self.hash_block_size, "a whole number of tokens >= 1")
        if not isinstance(self.self_timed, bool):
            raise ConfigError("workload.self_timed", self.self_timed, "true or false")
        if isinstance(self.trace_sec_multiplier, bool) or not isinstance(self.trace_sec_multiplier, (int, float)) \
                or not 0 < self.trace_sec_multiplier < math.inf:
            raise ConfigError("workload.trace_sec_multiplier", self.trace_sec_multiplier,
                              "seconds per unit of a timed trace's timestamps, > 0 (1: seconds, 0.001: ms)")
        if self.arrival == "trace" and (self.prefix_len or self.turns > 1):
            name, value = ("prefix_len", self.prefix_len) if self.prefix_len else ("turns", self.turns)
            raise ConfigError(f"workload.{name}", value, "0" if name == "prefix_len" else "1",
                              "a trace's prompts say what they share with their hash_ids")
        self.input.validate("input")
        self.output.validate("output")
        if self.batch_pool_share > 0:
            self.batch_input.validate("batch_input")
            self.batch_output.validate("batch_output")
        from .limits import check_workload

        check_workload(self)  # past what the simulator holds honestly (see sim/limits.py)

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in ("request_rate", "burstiness", "trace_rate"):
            if math.isinf(d[key]):
                d[key] = "inf"
        return d

    @classmethod
    def from_dict(cls, data: dict) -> "WorkloadSpec":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ConfigError("workload", sorted(unknown)[0], "a known traffic setting: " + ", ".join(sorted(known)))
        kwargs = dict(data)
        for key in ("input", "output", "batch_input", "batch_output"):
            if key in kwargs and isinstance(kwargs[key], dict):
                lk = {f.name for f in fields(LengthSpec)}
                bad = set(kwargs[key]) - lk
                if bad:
                    raise ConfigError(f"workload.{key}", sorted(bad)[0], "a length setting: " + ", ".join(sorted(lk)))
                kwargs[key] = LengthSpec(**kwargs[key])
        for key in ("request_rate", "burstiness", "trace_rate", "think_time"):
            if key in kwargs:
                try:
                    kwargs[key] = float(kwargs[key])
                except (TypeError, ValueError):
                    raise ConfigError(f"workload.{key}", kwargs[key], "a number") from None
        spec = cls(**kwargs)
        spec.validate()
        return spec

    def with_rate(self, rate: float) -> "WorkloadSpec":
        return replace(self, request_rate=rate)


# The running example as a chat: a 192-token system prompt shared by every conversation, three
# turns of a 64-token question and a 256-token answer, the next question 5 s after an answer
# (prompts of 256, 576 and 896 tokens: "about 512 tokens, history plus question"), 4 new
# conversations a second.
MULTI_TURN_HELPDESK = WorkloadSpec(arrival="poisson", request_rate=4.0, num_prompts=0, input=LengthSpec(mean=64),
                                   output=LengthSpec(mean=256), prefix_len=192, turns=3, think_time=5.0)


def _not_whole(value) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


def _arrival_times(spec: WorkloadSpec, rng: np.random.Generator, n: int, start: float) -> np.ndarray:
    """Arrival times after `start` (the previous arrival, or 0): one gap comes first, so a
    continuation of an endless workload keeps the same spacing."""
    import numpy as np

    rate = spec.request_rate
    if spec.arrival == "gamma":
        return start + _vllm_bench_delays(spec, rng, n)
    if spec.arrival == "all-at-once" or math.isinf(rate):
        return np.full(n, start)
    if spec.arrival == "constant":
        return start + np.arange(1, n + 1) / rate
    if spec.arrival == "bursts":
        burst = np.arange(n) // spec.burst_size + 1
        return start + burst * (spec.burst_size / rate)
    # poisson: exponential gaps, the first one included (as vllm bench serve does)
    return start + np.cumsum(rng.exponential(1.0 / rate, size=n))


def request_rates(spec: WorkloadSpec, n: int) -> np.ndarray:
    """The rate in force when each of `n` requests is sent, as `vllm bench serve` sets it: the
    request rate, or along a ramp-up from its start to its end rate (linear, or exponential),
    request i at progress i / (n - 1)."""
    import numpy as np

    if not spec.ramp_up_strategy:
        return np.full(n, spec.request_rate)
    lo, hi = spec.ramp_up_start_rps, spec.ramp_up_end_rps
    progress = np.arange(n) / max(n - 1, 1)
    return lo + (hi - lo) * progress if spec.ramp_up_strategy == "linear" else lo * (hi / lo) ** progress


def _vllm_bench_delays(spec: WorkloadSpec, rng: np.random.Generator, n: int) -> np.ndarray:
    """When each request is sent, as `vllm bench serve` schedules them: per request a gamma gap
    of shape `burstiness` and mean 1 / rate (a constant gap at burstiness inf, none at rate inf),
    summed; without a ramp-up the times are then scaled so the last one falls at n / rate."""
    import numpy as np

    b = spec.burstiness
    rates = request_rates(spec, n)
    if math.isinf(spec.request_rate) and not spec.ramp_up_strategy:
        return np.zeros(n)
    if math.isinf(b):
        gaps = 1.0 / rates
    else:
        gaps = rng.gamma(shape=b, scale=1.0 / (rates * b))
    times = np.cumsum(gaps)
    if not spec.ramp_up_strategy and n and times[-1] != 0:
        times = times * ((n / spec.request_rate) / times[-1])
    return times


class RequestQueue:
    """Requests waiting to arrive, in arrival order, held as arrays and made into RequestSpecs
    one at a time as the engine takes them: a million-request workload costs tens of MB, not
    the hundreds a list of objects would (the arrays are read a block at a time into lists,
    `_block`). The deque calls the engine uses (`[0]`, `popleft`, `extend`, `clear`, `len`)
    behave as on a deque of the same specs."""

    __slots__ = ("_times", "_prompt", "_output", "_batch", "_pool", "_first_index", "_next", "_count",
                 "_head", "_more", "_prefix_len", "_groups", "_turns", "_block", "_block_start",
                 "_block_end", "texts")
    _BLOCK = 1024

    def __init__(self, times, prompt, output, batch, pool: str, first_index: int = 0, *, prefix_len: int = 0,
                 groups=None, turns: int = 1, texts=None) -> None:
        self.texts = texts
        """A dataset's prompt texts, request by request from `first_index` (None: drawn lengths)."""
        self._times = times
        self._prompt = prompt  # the prompt after the shared prefix
        self._output = output
        self._batch = batch
        self._pool = pool
        self._first_index = first_index
        self._prefix_len = prefix_len
        self._groups = groups  # each request's prefix (None: prefix 0)
        self._turns = turns
        self._next = 0
        self._count = len(times)
        self._head: RequestSpec | None = None
        self._more: deque[RequestSpec] = deque()
        self._block: tuple = ()
        self._block_start = self._block_end = 0

    def _read_block(self, i: int) -> None:
        """Requests i, i + 1, ... (a block of them) as lists of Python numbers: times, prompts,
        outputs, batch-pool flags (or None), prefixes (or None)."""
        end = min(self._count, i + self._BLOCK)
        self._block = tuple(None if a is None else a[i:end].tolist()
                            for a in (self._times, self._prompt, self._output, self._batch, self._groups))
        self._block_start, self._block_end = i, end

    def _make(self, start: int, end: int) -> list[RequestSpec]:
        """Requests start, start + 1, ..., end - 1 as RequestSpecs."""
        specs = []
        append = specs.append
        prefix_len = self._prefix_len
        talks = self._turns > 1
        own_pool = self._pool
        priority, hash_ids, turn = (_SPEC_DEFAULTS[name] for name in ("priority", "hash_ids", "turn"))
        i = start
        while i < end:
            if not self._block_start <= i < self._block_end:
                self._read_block(i)
            base = self._block_start
            stop = min(end, self._block_end)
            first = self._first_index + base
            times, prompts, outputs, batches, groups = self._block
            if batches is None and not prefix_len and not talks:  # (the usual block: made at C speed, by position)
                a, b = i - base, stop - base
                specs += map(RequestSpec, map(str, range(first + a, first + b)), times[a:b], prompts[a:b],
                             outputs[a:b], repeat(priority), repeat(own_pool), repeat(hash_ids), repeat(None),
                             repeat(turn), repeat(""))
                i = stop
                continue
            for k in range(i - base, stop - base):
                rid = str(first + k)
                batch = batches is not None and batches[k]
                prompt = prompts[k]
                talk = talks and not batch  # a batch-pool request is one turn
                segments = None
                if prefix_len or talk:
                    own = (f"{rid}/q1", prompt) if talk else (rid, prompt)
                    segments = (own,)
                    if prefix_len:
                        group = 0 if groups is None else groups[k]
                        segments = ((PREFIX_SEGMENT.format(group), prefix_len), own)
                        prompt += prefix_len
                # (Positional, in the order of _POSITIONAL_FIELDS: one is made for every request.)
                append(RequestSpec(rid, times[k], prompt, outputs[k], priority, BATCH_POOL if batch else own_pool,
                                   hash_ids, segments, turn, rid if talk else ""))
            i = stop
        return specs

    def __len__(self) -> int:
        return self._count - self._next + (self._head is not None) + len(self._more)

    def __bool__(self) -> bool:
        return self._head is not None or self._next < self._count or bool(self._more)

    def __getitem__(self, index: int) -> RequestSpec:
        head = self._head
        if head is None or index != 0:
            if index != 0:
                raise IndexError("a request queue shows only its head")
            head = self._head = self._take()
        return head

    def _take(self) -> RequestSpec:
        if self._next < self._count:
            i = self._next
            spec = self._make(i, i + 1)[0]
            self._next = i + 1
            return spec
        if self._more:
            return self._more.popleft()
        raise IndexError("the request queue is empty")

    def take(self, n: int) -> list[RequestSpec]:
        """Up to `n` requests from the head, taken (as `n` popleft calls would take them)."""
        specs = [] if self._head is None else [self._head]
        self._head = None
        end = min(self._count, self._next + n - len(specs))
        specs += self._make(self._next, end)
        self._next = end
        more = self._more
        while len(specs) < n and more:
            specs.append(more.popleft())
        return specs

    def popleft(self) -> RequestSpec:
        if self._head is not None:
            spec, self._head = self._head, None
            return spec
        return self._take()

    def __iter__(self):
        while self:
            yield self.popleft()

    def extend(self, specs) -> None:
        self._more.extend(specs)

    def clear(self) -> None:
        self._next = self._count
        self._head = None
        self._more.clear()


def generate_queue(spec: WorkloadSpec, rng: np.random.Generator, n: int | None = None, start: float = 0.0,
                   first_index: int = 0, length_seed: int | None = None) -> RequestQueue | deque:
    """Draw `n` requests (default `spec.num_prompts`) arriving from `start` on, as a queue.

    What is sent (lengths, pools, prefixes, a dataset's sample) and when it is sent come from
    two streams, as `vllm bench serve` samples its dataset before it draws arrival times: the
    arrival times from `rng`, the rest from a generator of its own seeded by `length_seed` (drawn
    from `rng` first when not given) and the first request's index. The same seed sends the same
    prompts at every rate and arrival process."""
    import numpy as np

    if spec.arrival == "trace":
        return deque(trace_requests(spec))
    n = spec.num_prompts if n is None else n
    if n <= 0:
        return deque()
    if length_seed is None:
        length_seed = int(rng.integers(2**63))
    sample = length_stream(length_seed, first_index)
    times = _arrival_times(spec, rng, n, start)
    if spec.dataset != "random":
        prompt, output, texts = dataset_sample(spec, n, seed=int(sample.integers(2**63)))
        return RequestQueue(times, prompt, output, None, spec.pool, first_index, texts=texts,
                            **_sharing(spec, sample, n))
    prompt = spec.input.draw(sample, n)
    output = spec.output.draw(sample, n)
    pools = None
    if spec.batch_pool_share > 0:
        pools = sample.random(n) < spec.batch_pool_share
        prompt = np.where(pools, spec.batch_input.draw(sample, n), prompt)
        output = np.where(pools, spec.batch_output.draw(sample, n), output)
    # Token counts fit 32 bits (lengths are capped far below); half the memory of a long run's queue.
    return RequestQueue(times, _int32(prompt), _int32(output), pools, spec.pool, first_index,
                        **_sharing(spec, sample, n))


def length_stream(length_seed: int, first_index: int) -> np.random.Generator:
    """The generator a draw's lengths come from: its own, whatever the arrival times drew."""
    import numpy as np

    return np.random.default_rng((length_seed, first_index))


def _sharing(spec: WorkloadSpec, rng: np.random.Generator, n: int) -> dict:
    """What the requests of a draw share: the prefix length, each one's prefix (drawn only when
    there are several, so other workloads draw as before) and the turns."""
    import numpy as np

    groups = None
    if spec.prefix_len and spec.num_prefixes > 1:
        groups = rng.integers(0, spec.num_prefixes, size=n, dtype=np.int32) if n else None
    return {"prefix_len": spec.prefix_len, "groups": groups, "turns": spec.turns}


def next_turn(spec: WorkloadSpec, previous: RequestSpec, sent_at: float, seed: int,
              answered: int | None = None) -> RequestSpec:
    """The next turn of `previous`'s conversation, sent at `sent_at`: its prompt is the previous
    prompt, the answer (the `answered` tokens generated, `previous.output_len` unless it ended
    early) and a new question; the question's and the answer's lengths are drawn from the
    workload's distributions with a generator of their own (seeded by `seed`, the conversation
    and the turn), so they do not depend on the order answers finish in."""
    import zlib

    import numpy as np

    conversation = previous.conversation or previous.request_id
    turn = previous.turn + 1
    rng = np.random.default_rng((seed, zlib.crc32(conversation.encode()), turn))
    question = int(spec.input.draw(rng, 1)[0])
    answer = int(spec.output.draw(rng, 1)[0])
    if answered is None:
        answered = previous.output_len
    before = previous.prompt_segments or ((previous.request_id, previous.prompt_len),)
    segments = before + ((answer_segment(conversation, previous.turn), answered),
                         (f"{conversation}/q{turn}", question))
    return RequestSpec(request_id=f"{conversation}.{turn}", arrival_time=sent_at,
                       prompt_len=previous.prompt_len + answered + question, output_len=answer,
                       priority=previous.priority, pool=previous.pool, prompt_segments=segments, turn=turn,
                       conversation=conversation)


def _int32(values):
    import numpy as np

    return np.minimum(values, np.iinfo(np.int32).max).astype(np.int32)


def generate(spec: WorkloadSpec, rng: np.random.Generator, n: int | None = None, start: float = 0.0,
             first_index: int = 0, length_seed: int | None = None) -> list[RequestSpec]:
    """Draw `n` requests (default `spec.num_prompts`) arriving from `start` on (see
    `generate_queue`)."""
    return list(generate_queue(spec, rng, n, start, first_index, length_seed))


# -- traces --------------------------------------------------------------------------------------

def load_trace(path: str | Path, hash_block_size: int = VLLM_TRACE_BLOCK_TOKENS,
               sec_multiplier: float = VLLM_TRACE_SEC_MULTIPLIER) -> list[RequestSpec]:
    """Read a JSON Lines trace, one request a line, in one of two layouts:

    - ours, `{"arrival_time": s, "prompt_len": n, "output_len": n}` (optional `"priority"`,
      `"pool"`, `"request_id"`, and `"hash_ids"`, one per block of `hash_block_size` leading
      prompt tokens, the rest the prompt's own), sent in order of arrival;
    - vLLM's timed trace, `{"timestamp": t, "input_length": n, "output_length": n, "hash_ids":
      [...]}`, read as `vllm bench serve --dataset-name timed_trace` reads it: in the file's
      order, each sent at `timestamp x sec_multiplier` seconds (or right after the line before
      it, when that is later), its prompt built from its hash ids, `hash_block_size` tokens each,
      up to `input_length` tokens (so a prompt whose ids cover fewer is shorter, and one without
      ids would be empty: refused). Mooncake's traces are this layout in milliseconds with
      512-token blocks.
    """
    return _read_trace(path, hash_block_size, sec_multiplier)[0]


def _read_trace(path: str | Path, hash_block_size: int, sec_multiplier: float) -> tuple[list[RequestSpec], bool]:
    """`load_trace`'s requests, and whether the trace is in vLLM's timed layout."""
    from .userfiles import read_lines

    out: list[RequestSpec] = []
    timed = None
    for lineno, line in read_lines(path, "trace"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise WorkloadError(f"not valid JSON ({getattr(exc, 'msg', 'nested too deeply')})", str(path),
                                lineno) from None
        if not isinstance(obj, dict):
            raise WorkloadError("each line must be a JSON object", str(path), lineno)
        this = _timed_line(obj)
        if timed is None:
            timed = this
        elif this != timed:
            first = "a timed trace's (timestamp, input_length, ...)" if timed else "ours (arrival_time, prompt_len, ...)"
            raise WorkloadError(f"a line in the other layout than the first line's, {first}: a trace keeps to one",
                                str(path), lineno)
        spec = _trace_line(obj, len(out), str(path), lineno, hash_block_size, sec_multiplier)
        if timed and out and spec.arrival_time < out[-1].arrival_time:
            # vllm bench serve sends its lines in order, each after the one before it
            spec = replace(spec, arrival_time=out[-1].arrival_time)
        out.append(spec)
    if not out:
        raise WorkloadError("the trace holds no requests", str(path))
    if not timed:
        out.sort(key=lambda r: r.arrival_time)  # stable: file order breaks ties
    return out, bool(timed)


def _timed_line(obj: dict) -> bool:
    """Whether a trace line is in vLLM's timed layout (else ours)."""
    return "timestamp" in obj or "input_length" in obj


def is_timed_trace(path: str | Path) -> bool:
    """Whether the trace at `path` is in vLLM's timed layout (its first request's line says)."""
    from .userfiles import read_lines

    for lineno, line in read_lines(path, "trace"):
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                return False
            return isinstance(obj, dict) and _timed_line(obj)
    return False


def _trace_line(obj: dict, index: int, path: str, lineno: int, block: int = VLLM_TRACE_BLOCK_TOKENS,
                sec_multiplier: float = VLLM_TRACE_SEC_MULTIPLIER) -> RequestSpec:
    timed = _timed_line(obj)
    keys = TIMED_FIELDS[:3] if timed else ("arrival_time", "prompt_len", "output_len")
    for key in keys:
        if key not in obj:
            raise WorkloadError(f"missing \"{key}\"", path, lineno)
    t, pl, ol = (obj[k] for k in keys)
    scale = sec_multiplier if timed else 1.0
    unit = f"units of {sec_multiplier:g} s" if timed and sec_multiplier != 1 else "seconds"
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        raise WorkloadError(f"{keys[0]} must be a number of {unit} >= 0, got {t!r}", path, lineno)
    if t * scale > MAX_TRACE_SECONDS:
        raise WorkloadError(f"{keys[0]} {t!r} is later than a trace may run ({MAX_TRACE_SECONDS / scale:g} "
                            f"{unit}, about {MAX_TRACE_SECONDS / 86400:.0f} days)", path, lineno)
    for key, v in zip(keys[1:], (pl, ol)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise WorkloadError(f"{key} must be a whole number of tokens > 0, got {v!r}", path, lineno)
    prio = obj.get("priority", 0)
    if isinstance(prio, bool) or not isinstance(prio, int):
        raise WorkloadError(f"priority must be a whole number, got {prio!r}", path, lineno)
    hash_ids = obj.get("hash_ids", ())
    if not isinstance(hash_ids, list | tuple) or any(isinstance(h, bool) or not isinstance(h, int) for h in hash_ids):
        raise WorkloadError("hash_ids must be a list of whole numbers", path, lineno)
    request_id = str(obj.get("request_id", index))
    if timed:
        segments = vllm_prompt_segments(hash_ids, pl, block)
        if not segments:
            raise WorkloadError("no hash_ids: vLLM's timed_trace builds a prompt from its hash ids alone, so this "
                                "one would be empty (its server refuses it); a trace of lengths alone is written "
                                "as {\"arrival_time\": s, \"prompt_len\": n, \"output_len\": n}", path, lineno)
        pl = sum(n for _, n in segments)
    else:
        segments = hash_segments(hash_ids, pl, block, request_id, path, lineno)
    return RequestSpec(
        request_id=request_id, arrival_time=float(t) * scale, prompt_len=pl, output_len=ol,
        priority=prio, pool=str(obj.get("pool", "chat")), hash_ids=tuple(hash_ids), prompt_segments=segments)


def vllm_prompt_segments(hash_ids, input_length: int, block: int) -> tuple[tuple[str, int], ...]:
    """A timed trace's prompt as `vllm bench serve` builds it (`TimedTrace._expand_prompt`):
    `block` tokens for each hash id, the same tokens for the same id, until `input_length`
    tokens; a last id with fewer tokens left is a partial block whose tokens vLLM draws apart
    from the full block's (`h<id>:<n>`). Ids past `input_length` are not read; tokens past the
    ids are not sent."""
    segments = []
    left = input_length
    for h in hash_ids:
        if left <= 0:
            break
        n = min(block, left)
        segments.append((f"h{h}" if n == block else f"h{h}:{n}", n))
        left -= n
    return tuple(segments)


def hash_segments(hash_ids, prompt_len: int, block: int, request_id: str, path: str = "",
                  lineno: int | None = None) -> tuple[tuple[str, int], ...] | None:
    """A prompt of our trace layout as segments: one per hash id, `block` tokens each (the last
    one partial), then the tokens past the last id, its own (None without ids)."""
    if not hash_ids:
        return None
    blocks = -(-prompt_len // block)
    if len(hash_ids) > blocks + 1:  # one more is a producer's rounding; more, a wrong block size
        raise WorkloadError(f"{len(hash_ids)} hash_ids for a prompt of {prompt_len} tokens, which has only "
                            f"{blocks} blocks of {block} tokens (is the hash block size right?)", path, lineno)
    segments = []
    left = prompt_len
    for h in hash_ids[:blocks]:
        n = min(block, left)
        segments.append((f"h{h}", n))
        left -= n
    if left:
        segments.append((request_id, left))  # past the last id: its own
    return tuple(segments)


def trace_requests(spec: WorkloadSpec) -> list[RequestSpec]:
    """The trace of `spec`, rescaled to `trace_rate` (0: its own timing; inf: all at once) and cut
    or repeated to `trace_requests` requests (0: once, whole); a timed trace `self_timed` at its
    own timing, its first `trace_requests` lines only (0: 1,000). At its own timing the times are
    the file's (a first request at 5 s is sent 5 s in, as vLLM sends it); rescaled, they start
    from its first arrival; a repeat follows the previous copy one mean gap after its end."""
    base, timed = _read_trace(spec.trace_path, spec.hash_block_size, spec.trace_sec_multiplier)
    if spec.self_timed and timed and not spec.trace_rate:  # as vllm bench serve sends it
        return base[:spec.trace_requests or VLLM_NUM_PROMPTS]
    n = spec.trace_requests or len(base)
    if not spec.trace_requests and not spec.trace_rate:
        return base
    t0 = base[0].arrival_time
    span = base[-1].arrival_time - t0
    gap = span / (len(base) - 1) if len(base) > 1 else 0.0
    scale = 1.0
    if spec.trace_rate:
        if math.isinf(spec.trace_rate):
            scale = 0.0
        elif span <= 0:
            raise WorkloadError("every request of the trace arrives at once: it has no rate to rescale",
                                spec.trace_path)
        else:
            scale = ((len(base) - 1) / span) / spec.trace_rate
    period = span + gap
    origin = t0 if spec.trace_rate else 0.0  # (its own timing: the file's times)
    out = []
    for i in range(n):
        copy, j = divmod(i, len(base))
        r = base[j]
        arrival = (r.arrival_time - origin + copy * period) * scale
        rid = str(i) if n != len(base) else r.request_id
        segments = r.prompt_segments
        if segments and segments[-1][0] == r.request_id:  # its own tokens follow it to its new id
            segments = segments[:-1] + ((rid, segments[-1][1]),)
        out.append(replace(r, request_id=rid, arrival_time=arrival, prompt_segments=segments))
    return out


# -- datasets ------------------------------------------------------------------------------------

# Token counts without the model's tokenizer: text is split as byte-level BPE tokenizers
# pre-split it (words with their leading space, digits in groups of three, runs of punctuation,
# whitespace), and a word counts one token per six letters, rounded up. On English prose this
# lands near Llama 3's tokenizer (about 4 characters a token); treat it as an estimate.
_PIECES = re.compile(r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+")
LETTERS_PER_TOKEN = 6


def estimate_tokens(text: str) -> int:
    """An estimate of the tokens in `text` (at least 1)."""
    count = 0
    for piece in _PIECES.findall(text):
        letters = piece.strip()
        if not letters:
            count += piece.count("\n") and 1  # runs of spaces merge with the next word
            continue
        count += -(-len(letters) // LETTERS_PER_TOKEN) if letters[0].isalpha() else 1
    # The pattern skips only "_", which tokenizers keep as a token of its own.
    return max(1, count + text.count("_"))


# The same pieces with "_" as one of its own (where _PIECES matches nothing), so that every
# character of a text lands in a piece.
_EVERY_PIECE = re.compile(_PIECES.pattern + "|_")


def token_pieces(text: str) -> list[str]:
    """`text` cut into the tokens `estimate_tokens` counts, each a piece of it: as many pieces as
    it counts (for a non-empty text), and joined they give `text` back. A word past six letters is
    cut every six letters (a leading space stays with the first), a run of spaces without a line
    break goes with the token after it (with the last when none follows), and a text with nothing
    else counted is one token."""
    out: list[str] = []
    pending = ""  # spaces that count no token of their own
    for match in _EVERY_PIECE.finditer(text):  # (a match at a time: a thread reading a long text
        piece = match.group()                    # lets others run between them)
        letters = piece.strip()
        if not letters:
            if "\n" in piece:
                out.append(pending + piece)
                pending = ""
            else:
                pending += piece
            continue
        if letters[0].isalpha() and len(letters) > LETTERS_PER_TOKEN:
            lead = piece[:len(piece) - len(letters)]
            cuts = range(0, len(letters), LETTERS_PER_TOKEN)
            out.extend((pending + lead if i == 0 else "") + letters[i:i + LETTERS_PER_TOKEN] for i in cuts)
        else:
            out.append(pending + piece)
        pending = ""
    if pending:
        if out:
            out[-1] += pending
        else:
            out.append(pending)
    return out


# ShareGPT pruning, as vllm bench serve applies it (a prompt or answer under 4 tokens, a prompt
# over 1024, or both over 2048 are skipped; with a fixed output length only the prompt counts).
SHAREGPT_MIN_LEN = 4
SHAREGPT_MAX_PROMPT_LEN = 1024
SHAREGPT_MAX_TOTAL_LEN = 2048
CUSTOM_DEFAULT_OUTPUT_LEN = 256  # vllm bench serve's --custom-output-len


def _valid_sharegpt(prompt_len: int, output_len: int, fixed_output: bool) -> bool:
    return not (prompt_len < SHAREGPT_MIN_LEN
                or (not fixed_output and output_len < SHAREGPT_MIN_LEN)
                or prompt_len > SHAREGPT_MAX_PROMPT_LEN
                or prompt_len + output_len > SHAREGPT_MAX_TOTAL_LEN)


@functools.lru_cache(maxsize=4)
def _dataset_texts(kind: str, path: str, mtime_ns: int, size: int) -> tuple[tuple[str, str], ...]:
    """(prompt, answer) texts of a dataset file, cached while the file is unchanged (a plan runs
    the same file many times)."""
    from .userfiles import read_lines, read_text

    if kind == "sharegpt":
        try:
            data = json.loads(read_text(path, "dataset"))
        except (json.JSONDecodeError, RecursionError) as exc:
            raise WorkloadError(f"not valid JSON ({getattr(exc, 'msg', 'nested too deeply')})", path,
                                getattr(exc, "lineno", None)) from None
        if not isinstance(data, list):
            raise WorkloadError("a ShareGPT file is a JSON list of conversations", path)
        out = []
        for entry in data:
            turns = entry.get("conversations") if isinstance(entry, dict) else None
            if not isinstance(turns, list) or len(turns) < 2:
                continue  # vLLM keeps conversations of two turns or more
            texts = [t.get("value") if isinstance(t, dict) else None for t in turns[:2]]
            if not all(isinstance(x, str) for x in texts):
                raise WorkloadError("each turn of a conversation needs a text \"value\"", path)
            out.append((texts[0], texts[1]))
        return tuple(out)
    out = []
    for lineno, line in read_lines(path, "dataset"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise WorkloadError(f"not valid JSON ({getattr(exc, 'msg', 'nested too deeply')})", path,
                                lineno) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str):
            raise WorkloadError("each line of a custom dataset needs a text \"prompt\"", path, lineno)
        out.append((obj["prompt"], ""))
    return tuple(out)


def dataset_lengths(spec: WorkloadSpec, n: int, seed: int = 0):
    """(prompt, output) token counts of `n` requests drawn from a dataset file as vllm bench serve
    samples it: conversations shuffled with the seed, the invalid skipped, then oversampled
    (random picks, seeded) when the file holds too few."""
    prompt, output, _ = dataset_sample(spec, n, seed)
    return prompt, output


def dataset_sample(spec: WorkloadSpec, n: int, seed: int = 0):
    """`dataset_lengths`, and the prompts' texts (a list, request by request): what a client
    that sends them (`batchtui bench`) sends."""
    import random

    import numpy as np

    path = spec.dataset_path
    try:
        st = Path(path).stat()
    except OSError as exc:
        raise WorkloadError(f"cannot read the dataset file: {exc.strerror or exc}", path) from None
    texts = list(_dataset_texts(spec.dataset, path, st.st_mtime_ns, st.st_size))
    random.Random(seed).shuffle(texts)
    fixed = spec.dataset_output_len
    if spec.dataset == "custom":
        fixed = fixed or CUSTOM_DEFAULT_OUTPUT_LEN
    lengths: list[tuple[int, int]] = []
    prompts: list[str] = []
    for prompt, answer in texts:
        if len(lengths) >= n:
            break
        p = estimate_tokens(prompt)
        o = fixed or estimate_tokens(answer)
        if spec.dataset == "sharegpt" and not _valid_sharegpt(p, o, bool(fixed)):
            continue
        lengths.append((p, o))
        prompts.append(prompt)
    if not lengths:
        raise WorkloadError("no request in the dataset passes vllm bench serve's length filter "
                            f"(prompts of {SHAREGPT_MIN_LEN}-{SHAREGPT_MAX_PROMPT_LEN} tokens, prompt + "
                            f"answer at most {SHAREGPT_MAX_TOTAL_LEN})", path)
    if len(lengths) < n:
        pick, found = random.Random(seed), len(lengths)
        for _ in range(n - found):
            i = pick.randrange(found)  # (random.choice's own draw: the picks are as they were)
            lengths.append(lengths[i])
            prompts.append(prompts[i])
    arr = np.array(lengths, dtype=np.int64)
    return arr[:, 0], arr[:, 1], prompts
