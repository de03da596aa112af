"""A request as the engine tracks it while serving it."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from .errors import RequestRejected
from .kv import Block, BlockPool, Run, prompt_block_hashes

if TYPE_CHECKING:
    from .config import EngineConfig

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
        "num_output_placeholders", "prompt_segments", "output_segment", "named", "num_cached_tokens",
        "kv_run", "kv_shared", "kv_own", "_hashes", "client_queue_time",
        "num_drafts", "prefill_chunk", "spec_verifications", "spec_scheduled", "spec_accepted", "tokens_sampled",
    )

    def __init__(self, request_id: str, arrival_time: float, prompt_len: int, output_len: int,
                 priority: int = 0, pool: str = "chat", seq: int = 0,
                 prompt_segments: tuple[tuple[str, int], ...] | None = None,
                 output_segment: str | None = None, client_queue_time: float = 0.0) -> None:
        self.request_id = request_id
        self.client_queue_time = client_queue_time  # waited at the client before it was sent
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
        self.num_output_placeholders = 0  # tokens sampled in a batch whose output is not processed yet
        # The prompt's identity for prefix caching: (name, length) segments adding up to
        # prompt_len (a token is its segment's name and its position in it), or None for a prompt
        # nobody shares.
        self.prompt_segments = prompt_segments
        # The name of its output as a segment (a conversation's answer, which the next turn's
        # prompt repeats), or None for an output no other prompt contains.
        self.output_segment = output_segment
        # Whether another request may share its tokens: its prompt has segments or its output a
        # name (set once: the prefix cache reads it for every request).
        self.named = prompt_segments is not None or output_segment is not None
        self.num_cached_tokens = -1  # prompt tokens found in the prefix cache at first admission
        # The prefix cache's state of it (sim.kv.BlockPool's): while it holds blocks, its hashed
        # head (shared Blocks, then a count of blocks only it can hit); once freed, its hashed
        # blocks only it can hit (a Run), while cached.
        self.kv_shared: list[Block] | None = None
        self.kv_own = 0
        self.kv_run: Run | None = None
        self._hashes: list[int] | None = None
        # Speculative decoding: the drafts offered to the next schedule (vLLM's
        # len(spec_token_ids)); whether the last batch scheduled left it short of its known
        # tokens (vLLM's is_prefill_chunk); and its totals: verifications (steps with a
        # drafter's drafts scheduled), draft tokens scheduled (padding included) and accepted,
        # tokens sampled before a stop trimmed them.
        self.num_drafts = 0
        self.prefill_chunk = False
        self.spec_verifications = 0
        self.spec_scheduled = 0
        self.spec_accepted = 0
        self.tokens_sampled = 0

    def block_hashes(self, block_size: int) -> list[int]:
        """The chained hashes of the full blocks of its named tokens (computed once; named
        requests only): the prompt's segments (one named after the request if it has none),
        then, if its output has a name, `output_len` tokens of it (vLLM hashes generated blocks
        too; only those whose tokens are known are ever cached)."""
        hashes = self._hashes
        if hashes is None:
            segments = self.prompt_segments or ((self.request_id, self.prompt_len),)
            if self.output_segment is not None:
                segments += ((self.output_segment, self.output_len),)
            hashes = self._hashes = prompt_block_hashes(segments, block_size)
        return hashes

    @property
    def num_tokens(self) -> int:
        return self.prompt_len + self.num_output_tokens

    @property
    def is_prefilling(self) -> bool:
        """More than one token behind: the next work is a prefill chunk (or a recompute). Tokens
        sampled but not yet processed (async scheduling) count as known."""
        return self.prefilling_at(self.num_computed_tokens, self.num_output_placeholders)

    def prefilling_at(self, computed: int, in_flight: int) -> bool:
        """`is_prefilling` had `computed` tokens been computed with `in_flight` sampled but not yet
        processed (a snapshot asks it of the tokens before a batch already scheduled)."""
        return self.num_tokens + in_flight - computed > 1 or self.num_output_tokens + in_flight == 0

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return (f"Request({self.request_id!r}, p={self.prompt_len}, o={self.num_output_tokens}/"
                f"{self.output_len}, c={self.num_computed_tokens}, {self.status})")


def peak_tokens(prompt_len: int, output_len: int, max_model_len: int) -> int:
    """The most tokens a request holds in the KV cache: its last output token is sampled but never
    written, and it stops at max_model_len (the blocks it holds at its peak are the pool's
    `blocks_for` of this; `sim.planning` sizes a batch by it too)."""
    peak = prompt_len + output_len - 1
    return peak if peak < max_model_len else max_model_len - 1


def check_request(req_id: str, prompt_len: object, output_len: object, config: EngineConfig,
                  pool: BlockPool) -> None:
    """Refuse, with the limit named, a request that vLLM would refuse or `pool` could never hold
    (the blocks it holds at its peak: `BlockPool.blocks_for`). The lengths may be anything a file
    held (typed `object`: the compiled core checks an annotation before the body runs)."""
    # (Called for every arrival: a plain int is told apart from other numbers with one call.)
    if (type(prompt_len) is not int and not _whole(prompt_len)) or prompt_len <= 0:
        raise RequestRejected(req_id, f"prompt_len must be a whole number > 0, got {prompt_len!r}")
    if (type(output_len) is not int and not _whole(output_len)) or output_len <= 0:
        raise RequestRejected(req_id, f"output_len must be a whole number > 0, got {output_len!r}")
    max_model_len = config.max_model_len
    if prompt_len >= max_model_len:
        raise RequestRejected(
            req_id, f"its prompt of {prompt_len} tokens is not shorter than {{engine.max_model_len}} "
                    f"({max_model_len})")
    peak = peak_tokens(prompt_len, output_len, max_model_len)
    stops = peak < prompt_len + output_len - 1  # it stops at max_model_len
    peak_blocks = pool.blocks_for(peak)
    usable_blocks, block_size = pool.usable, pool.block_size
    if peak_blocks > usable_blocks:
        held = (f"{peak} tokens: it stops at {{engine.max_model_len}} ({max_model_len}) - 1" if stops
                else f"{prompt_len} + {output_len} - 1 = {peak} tokens")
        raise RequestRejected(
            req_id, f"it needs {peak_blocks} KV blocks ({held}) but the cache has only {usable_blocks} usable "
                    f"blocks of {block_size} tokens ({usable_blocks * block_size} tokens); it could never be served")


def _whole(value: object) -> TypeGuard[int]:
    """An int that is not a bool (True is not a token count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_segments(req_id: str, segments, prompt_len: int) -> tuple[tuple[str, int], ...] | None:
    """A prompt's segments as a tuple of (name, length), refused with a reason unless their
    lengths (whole numbers > 0) add up to `prompt_len`."""
    if segments is None:
        return None
    try:
        out = tuple((str(name), length) for name, length in segments)
    except (TypeError, ValueError):
        raise RequestRejected(req_id, "prompt segments must be (name, length) pairs") from None
    for name, length in out:
        if isinstance(length, bool) or not isinstance(length, int) or length <= 0:
            raise RequestRejected(req_id, f"the length of prompt segment {name!r} must be a whole number > 0, "
                                          f"got {length!r}")
    total = sum(length for _, length in out)
    if total != prompt_len:
        raise RequestRejected(req_id, f"its prompt segments add up to {total} tokens, not its prompt_len "
                                      f"of {prompt_len}")
    return out
