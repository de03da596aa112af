"""The engine's dials, named as vLLM names them, with vLLM's validation and defaults."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from .errors import ConfigError

BATCHING_POLICIES = ("sequential", "static", "dynamic", "continuous")
SCHEDULING_POLICIES = ("fcfs", "priority")
GIB = 1024**3


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Scheduler dials. Continuous batching reads the vLLM ones; static and dynamic batching read
    `max_batch_size` (and `max_queue_delay`, seconds); sequential reads none."""

    batching: str = "continuous"
    max_num_seqs: int = 1024
    # vLLM 0.33's --max-num-active-seqs (None: max_num_seqs): see `seats`.
    max_num_active_seqs: int | None = None
    max_num_batched_tokens: int = 8192
    # vLLM 0.33's --max-num-scheduled-tokens (None: max_num_batched_tokens): see `token_budget`.
    max_num_scheduled_tokens: int | None = None
    enable_chunked_prefill: bool = True
    long_prefill_token_threshold: int = 0
    # vLLM 0.33's --long-prefill-token-threshold-adaptive: the cap is floored at
    # max_num_batched_tokens // (running + waiting requests) (vllm/v1/core/sched/scheduler.py).
    long_prefill_token_threshold_adaptive: bool = False
    scheduling_policy: str = "fcfs"
    max_model_len: int = 131072
    watermark: float = 0.0
    scheduler_reserve_full_isl: bool = True
    max_batch_size: int = 64
    max_queue_delay: float = 0.010
    # Schedule batch k before batch k-1's output is processed, the host's work overlapping the
    # GPU's (see `runs_async`). On by default, as in vLLM 0.33, which turns it on unless
    # something is incompatible.
    async_scheduling: bool = True
    enable_prefix_caching: bool = True  # vLLM's automatic prefix caching (continuous batching)
    # API server processes in front of the engine core (vLLM's --api-server-count, default 1): each
    # does its share of the requests' and tokens' host work one job at a time (sim/frontend.py); 0:
    # none, requests reach the engine as sent (vLLM's offline LLM class, or a headless engine).
    api_server_count: int = 1

    def validate(self) -> None:
        """Raise ConfigError for a value vLLM (or this simulator) refuses."""
        if self.batching not in BATCHING_POLICIES:
            raise ConfigError("engine.batching", self.batching, "one of " + ", ".join(BATCHING_POLICIES))
        if self.scheduling_policy not in SCHEDULING_POLICIES:
            raise ConfigError("engine.scheduling_policy", self.scheduling_policy, "fcfs or priority")
        _positive_int("engine.max_model_len", self.max_model_len)
        _positive_int("engine.max_num_seqs", self.max_num_seqs)
        _positive_int("engine.max_num_batched_tokens", self.max_num_batched_tokens)
        _positive_int("engine.max_batch_size", self.max_batch_size)
        if isinstance(self.api_server_count, bool) or not isinstance(self.api_server_count, int) \
                or self.api_server_count < 0:
            raise ConfigError("engine.api_server_count", self.api_server_count,
                              "a whole number of API server processes >= 0 (0: none, an offline run)")
        if self.max_num_scheduled_tokens is not None:
            _positive_int("engine.max_num_scheduled_tokens", self.max_num_scheduled_tokens)
        if self.max_num_active_seqs is not None:
            _positive_int("engine.max_num_active_seqs", self.max_num_active_seqs)
            if self.max_num_active_seqs > self.max_num_seqs:
                raise ConfigError("engine.max_num_active_seqs", self.max_num_active_seqs,
                                  f"at most {{engine.max_num_seqs}} ({self.max_num_seqs:,})", "as vLLM 0.33 requires")
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ConfigError(
                "engine.max_num_batched_tokens", self.max_num_batched_tokens,
                f"at least {{engine.max_num_seqs}} ({self.max_num_seqs:,})",
                "vLLM requires a token budget of at least one token per seat",
            )
        if not self.enable_chunked_prefill and self.token_budget < self.max_model_len:
            binding = ("max_num_batched_tokens" if self.token_budget == self.max_num_batched_tokens
                       else "max_num_scheduled_tokens")
            raise ConfigError(
                f"engine.{binding}", self.token_budget,
                f"at least {{engine.max_model_len}} ({self.max_model_len:,}) without chunked prefill",
                "a whole prompt must fit one iteration: lower {engine.max_model_len} or turn on "
                "{engine.enable_chunked_prefill}",
            )
        if (isinstance(self.long_prefill_token_threshold, bool)
                or not isinstance(self.long_prefill_token_threshold, int)
                or not 0 <= self.long_prefill_token_threshold <= self.max_model_len):
            raise ConfigError("engine.long_prefill_token_threshold", self.long_prefill_token_threshold,
                              f"a whole number from 0 (off) to {{engine.max_model_len}} ({self.max_model_len:,})")
        if not (isinstance(self.watermark, (int, float)) and 0.0 <= self.watermark < 1.0):
            raise ConfigError("engine.watermark", self.watermark, "a fraction of the blocks in [0, 1)")
        if not isinstance(self.async_scheduling, bool):
            raise ConfigError("engine.async_scheduling", self.async_scheduling, "true or false")
        for name in ("enable_chunked_prefill", "scheduler_reserve_full_isl", "enable_prefix_caching",
                     "long_prefill_token_threshold_adaptive"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"engine.{name}", getattr(self, name), "true or false")
        if not (isinstance(self.max_queue_delay, (int, float)) and math.isfinite(self.max_queue_delay)
                and self.max_queue_delay >= 0):
            raise ConfigError("engine.max_queue_delay", self.max_queue_delay, "a wait in seconds >= 0")
        from .limits import check_engine

        check_engine(self)  # past what the simulator holds honestly (see sim/limits.py)

    @property
    def seats(self) -> int:
        """Requests continuous batching admits into RUNNING: vLLM 0.33 admits up to
        `max_num_active_seqs` when set (at most max_num_seqs, which still sizes the model runner
        and its CUDA graphs), else max_num_seqs."""
        return self.max_num_seqs if self.max_num_active_seqs is None else self.max_num_active_seqs

    @property
    def token_budget(self) -> int:
        """Tokens one iteration may schedule. vLLM 0.33's scheduler (vllm/v1/core/sched/scheduler.py)
        spends two budgets at once: `max_num_scheduled_tokens` (its default is
        max_num_batched_tokens) and max_num_batched_tokens less the draft-token slots of
        speculative decoding (none here: speculative decoding is refused), each request's tokens
        taken from both; so the lower of the two binds."""
        if self.max_num_scheduled_tokens is None:
            return self.max_num_batched_tokens
        return min(self.max_num_scheduled_tokens, self.max_num_batched_tokens)

    @property
    def caches_prefixes(self) -> bool:
        """Whether prefix caching is on: vLLM's prefix cache belongs to its (continuous)
        scheduler's KV cache manager, so the other policies never cache."""
        return self.enable_prefix_caching and self.batching == "continuous"

    @property
    def runs_async(self) -> bool:
        """Whether the engine schedules asynchronously. vLLM enables async scheduling unless an
        option is incompatible with it (vllm/config/vllm.py); here, as there, a pooling
        (encoder) model, which is served by dynamic batching, and every policy other than vLLM's
        continuous batching run synchronously whatever `async_scheduling` says."""
        return self.async_scheduling and self.batching == "continuous"

    @property
    def overlaps_host(self) -> bool:
        """Whether the host's work for an iteration (`CostModel.host_overhead`) overlaps the
        forward pass instead of adding to it: with `async_scheduling`, under every policy. Only
        continuous batching also schedules a step ahead (`runs_async`); the other policies know
        their next batch in advance (the same requests until the batch ends, in this model), so
        their host work overlaps without the step of lag, and a lesson comparing policies
        compares batching, not host work."""
        return self.async_scheduling

    def replace(self, **changes) -> "EngineConfig":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


def _positive_int(dial: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(dial, value, "a whole number > 0")


def vllm_defaults(gpu_id: str, memory_bytes: float, offline: bool = False) -> dict:
    """`max_num_seqs` and `max_num_batched_tokens` as vLLM 0.33 picks them for a GPU.

    `vllm serve` and offline use (the `LLM` class) differ in the token budget only.
    """
    mem_gib = memory_bytes / GIB
    if mem_gib >= 160:
        return {"max_num_seqs": 1024, "max_num_batched_tokens": 16384}
    if mem_gib >= 70 and "a100" not in gpu_id.lower():
        return {"max_num_seqs": 1024, "max_num_batched_tokens": 16384 if offline else 8192}
    return {"max_num_seqs": 256, "max_num_batched_tokens": 8192 if offline else 2048}


def cudagraph_capture_sizes(config: EngineConfig, ceiling: int = 512) -> tuple[int, ...]:
    """The token counts vLLM 0.33 captures CUDA graphs for, by default (vllm/config/vllm.py,
    `_set_cudagraph_sizes`; balanced performance mode, no speculative decoding): 1, 2, 4, then
    every 8 below 256, then every 16, up to min(2 x max_num_seqs, the GPU's ceiling,
    max_num_batched_tokens); max_num_batched_tokens and max_num_seqs too where they fit. An
    iteration of T tokens up to the largest runs the graph of the next size up, padded; a larger
    one runs without a graph."""
    top = min(config.max_num_seqs * 2, ceiling)
    decode = [config.max_num_seqs] if config.max_num_seqs <= top else []
    tokens = config.max_num_batched_tokens
    top = min(tokens, top)
    sizes = [i for i in (1, 2, 4) if i <= top]
    if top >= 8:
        sizes += range(8, min(top + 1, 256), 8)
    if top >= 256:
        sizes += range(256, top + 1, 16)
    if tokens <= top:
        sizes.append(tokens)
    sizes += [size for size in decode if size <= tokens]
    return tuple(sorted(set(sizes)))


_CAPS = ("max_num_seqs", "max_num_active_seqs", "max_num_batched_tokens", "max_num_scheduled_tokens")


def caps_cover(used, ran: EngineConfig, other: EngineConfig, ceiling: int = 512) -> bool:
    """Whether a continuous-batching run under `ran` whose caps came only as near as `used` says
    (`sim.schedulers.base.CapsUsed`) runs the same, to the float, under `other`, the scenario
    otherwise the same and without speculative decoding. The seats enter the scheduler's seat
    check and the CUDA graph sizes; the token budget the scheduler's cuts and checks, the graph
    sizes and (`max_num_batched_tokens`) the adaptive long-prefill cap and the async stretch's
    batch bound; nothing else (KV cache sizing, the API server and the cost model's other terms
    do not read them). So `other` may differ only in its caps, each either the same or (a cap
    that never bound) above the run's peak, and its graph sizes must pad every token count up to
    the run's peak as `ran`'s do. `ceiling` is the GPU's CUDA graph ceiling."""
    if used is None or ran.batching != "continuous" or ran.replace(**dict.fromkeys(_CAPS)) \
            != other.replace(**dict.fromkeys(_CAPS)):
        return False
    if other.seats != ran.seats and (used.seats_bound or other.seats <= used.peak_running):
        return False
    if other.token_budget != ran.token_budget and (used.budget_bound or other.token_budget <= used.peak_tokens):
        return False
    if other.max_num_batched_tokens != ran.max_num_batched_tokens and (
            ran.long_prefill_token_threshold and ran.long_prefill_token_threshold_adaptive):
        return False
    if other.max_num_batched_tokens < other.max_num_seqs:
        return False  # (vLLM refuses it)
    # An iteration of T tokens runs the graph of the next size up, or none above the largest:
    # the same for every T up to the peak when the sizes agree up to the first one reaching it.
    peak = max(used.peak_tokens, used.peak_running)
    return _sizes_to(cudagraph_capture_sizes(ran, ceiling), peak) == _sizes_to(cudagraph_capture_sizes(other, ceiling),
                                                                               peak)


def _sizes_to(sizes: tuple[int, ...], peak: int) -> tuple[int, ...]:
    """The sizes below `peak` and the first at or above it (if any)."""
    below = tuple(s for s in sizes if s < peak)
    return below + tuple(s for s in sizes if s >= peak)[:1]
