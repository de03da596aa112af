"""A request as the engine tracks it while serving it."""

from __future__ import annotations

from sim.errors import RequestRejected

WAITING = "waiting"
RUNNING = "running"
PREEMPTED = "preempted"
FINISHED = "finished"


class Request:
    """Mutable serving state of one request.

    `num_tokens` is prompt + outputs so far; `num_computed_tokens` is how many of them have KV in
    the cache. The scheduler spends its budget to bring the second up to the first.
    """

    __slots__ = (
        "request_id", "arrival_time", "prompt_len", "output_len", "priority", "pool", "seq",
        "num_computed_tokens", "num_output_tokens", "status", "num_preemptions",
        "first_token_time", "last_token_time", "finish_time", "first_scheduled_time",
        "first_token_iteration", "finish_iteration", "finish_reason", "max_gap",
    )

    def __init__(self, request_id: str, arrival_time: float, prompt_len: int, output_len: int,
                 priority: int = 0, pool: str = "chat", seq: int = 0) -> None:
        self.request_id = request_id
        self.arrival_time = arrival_time
        self.prompt_len = prompt_len
        self.output_len = output_len
        self.priority = priority
        self.pool = pool
        self.seq = seq  # order of submission: breaks ties between equal arrival times
        self.num_computed_tokens = 0
        self.num_output_tokens = 0
        self.status = WAITING
        self.num_preemptions = 0
        self.first_token_time: float | None = None
        self.last_token_time: float | None = None
        self.finish_time: float | None = None
        self.first_scheduled_time: float | None = None
        self.first_token_iteration: int | None = None
        self.finish_iteration: int | None = None
        self.finish_reason = ""
        self.max_gap = 0.0

    @property
    def num_tokens(self) -> int:
        return self.prompt_len + self.num_output_tokens

    @property
    def is_prefilling(self) -> bool:
        """More than one token behind: the next work is a prefill chunk (or a recompute)."""
        return self.num_tokens - self.num_computed_tokens > 1 or self.num_output_tokens == 0

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return (f"Request({self.request_id!r}, p={self.prompt_len}, o={self.num_output_tokens}/"
                f"{self.output_len}, c={self.num_computed_tokens}, {self.status})")


def check_request(req_id: str, prompt_len: int, output_len: int, config: EngineConfig,
                  usable_blocks: int, block_size: int) -> None:
    """Refuse, with the limit named, a request that vLLM would refuse or could never serve."""
    if isinstance(prompt_len, bool) or not isinstance(prompt_len, int) or prompt_len <= 0:
        raise RequestRejected(req_id, f"prompt_len must be a whole number > 0, got {prompt_len!r}")
    if isinstance(output_len, bool) or not isinstance(output_len, int) or output_len <= 0:
        raise RequestRejected(req_id, f"output_len must be a whole number > 0, got {output_len!r}")
    if prompt_len >= config.max_model_len:
        raise RequestRejected(
            req_id, f"its prompt of {prompt_len} tokens is not shorter than max_model_len "
                    f"({config.max_model_len})")
    peak_tokens = min(prompt_len + output_len - 1, config.max_model_len - 1)
    peak_blocks = -(-peak_tokens // block_size)
    if peak_blocks > usable_blocks:
        raise RequestRejected(
            req_id, f"it needs {peak_blocks} KV blocks ({prompt_len} + {output_len} - 1 = {peak_tokens} "
                    f"tokens) but the cache has only {usable_blocks} usable blocks of {block_size} tokens "
                    f"({usable_blocks * block_size} tokens); it could never be served")
