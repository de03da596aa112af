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
    max_num_batched_tokens: int = 8192
    enable_chunked_prefill: bool = True
    long_prefill_token_threshold: int = 0
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

    def validate(self) -> None:
        """Raise ConfigError for a value vLLM (or this simulator) refuses."""
        if self.batching not in BATCHING_POLICIES:
            raise ConfigError("batching", self.batching, "one of " + ", ".join(BATCHING_POLICIES))
        if self.scheduling_policy not in SCHEDULING_POLICIES:
            raise ConfigError("scheduling_policy", self.scheduling_policy, "fcfs or priority")
        _positive_int("max_model_len", self.max_model_len)
        _positive_int("max_num_seqs", self.max_num_seqs)
        _positive_int("max_num_batched_tokens", self.max_num_batched_tokens)
        _positive_int("max_batch_size", self.max_batch_size)
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ConfigError(
                "max_num_batched_tokens", self.max_num_batched_tokens,
                f"at least max_num_seqs ({self.max_num_seqs})",
                "vLLM requires a token budget of at least one token per seat",
            )
        if not self.enable_chunked_prefill and self.max_num_batched_tokens < self.max_model_len:
            raise ConfigError(
                "max_num_batched_tokens", self.max_num_batched_tokens,
                f"at least max_model_len ({self.max_model_len}) when chunked prefill is off",
                "a whole prompt must fit one iteration; lower --max-model-len or enable chunked prefill",
            )
        if (isinstance(self.long_prefill_token_threshold, bool)
                or not isinstance(self.long_prefill_token_threshold, int)
                or not 0 <= self.long_prefill_token_threshold <= self.max_model_len):
            raise ConfigError("long_prefill_token_threshold", self.long_prefill_token_threshold,
                              f"a whole number from 0 (off) to max_model_len ({self.max_model_len})")
        if not (isinstance(self.watermark, (int, float)) and 0.0 <= self.watermark < 1.0):
            raise ConfigError("watermark", self.watermark, "a fraction of the blocks in [0, 1)")
        if not isinstance(self.async_scheduling, bool):
            raise ConfigError("async_scheduling", self.async_scheduling, "true or false")
        for name in ("enable_chunked_prefill", "scheduler_reserve_full_isl", "enable_prefix_caching"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, getattr(self, name), "true or false")
        if not (isinstance(self.max_queue_delay, (int, float)) and math.isfinite(self.max_queue_delay)
                and self.max_queue_delay >= 0):
            raise ConfigError("max_queue_delay", self.max_queue_delay, "a wait in seconds >= 0")
        from .limits import check_engine

        check_engine(self)  # past what the simulator holds honestly (see sim/limits.py)

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
