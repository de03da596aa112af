"""Frozen records the engine hands out: one per iteration, and a snapshot of live state.

They are plain data so that the asyncio driver can publish them to any listener (the Textual
app is one) without the listener touching the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Why nothing more was scheduled in an iteration (SIMULATOR.md §6).
RATE_WINDOW_S = 10.0
"""The live view's rates (tokens/s, requests/s: `MetricsView`) are over this much recent
simulated time."""

BINDING_LIMITS = ("token_budget", "max_num_seqs", "kv_cache", "none")

# What one seat (slot) of the engine is doing.
SEAT_STATES = ("idle", "prefill", "decode", "padded", "preempted")


@dataclass(frozen=True, slots=True)
class ScheduledWork:
    """One request's share of an iteration."""

    request_id: str
    num_tokens: int
    is_prefill: bool
    context_len: int  # tokens with KV in the cache once this iteration ran


@dataclass(frozen=True, slots=True)
class IterationCostParts:
    """Time of one iteration split by what it spent it on (seconds).

    The parts do not simply add up: the linear layers stream the weights and compute at the same
    time, so they take `linear` = sqrt(weights² + compute²) (a smooth roofline), not weights +
    compute. `terms()` are the parts that do add up to `total`."""

    weights: float = 0.0
    """Linear layers if only the weight read counted (t_mem)."""
    compute: float = 0.0
    """Linear layers if only the GEMM arithmetic counted (t_cmp)."""
    kv_read: float = 0.0
    prefill_attention: float = 0.0
    allreduce: float = 0.0
    overhead: float = 0.0
    total: float = 0.0
    binding: str = "none"  # the largest term, named as above
    linear_binding: str = "weights"  # "weights" or "compute": which side of the roofline
    bandwidth_share: float = 0.0  # HBM bytes read ÷ (time × bandwidth)
    tensor_core_share: float = 0.0  # FLOPs ÷ (time × dense bf16 peak)
    linear: float = 0.0
    """The linear layers' time, weights and compute overlapped: sqrt(weights² + compute²)."""
    draft: float = 0.0
    """Speculative decoding: the drafter's passes after the target's (0 without a drafter)."""
    experts_read: float = 0.0
    """A mixture of experts: routed experts each MoE layer read (uniform routing's expectation,
    `sim.cost.ExpertReads`); 0 for a dense model."""
    experts: int = 0
    """A mixture of experts: routed experts in each MoE layer (0: a dense model)."""

    def terms(self) -> tuple[tuple[str, float], ...]:
        """(name, seconds) parts whose sum, in this order, is `total`: the linear layers
        (weights and compute overlapped), the KV read, prefill attention, all-reduce, overhead,
        and the drafter's passes when there are any."""
        parts = (("linear", self.linear), ("kv_read", self.kv_read),
                 ("prefill_attention", self.prefill_attention), ("allreduce", self.allreduce),
                 ("overhead", self.overhead))
        return parts + (("draft", self.draft),) if self.draft else parts


@dataclass(frozen=True, slots=True)
class IterationReport:
    """What happened in one engine iteration."""

    index: int  # 1-based
    start_time: float
    end_time: float
    scheduled: tuple[ScheduledWork, ...]
    num_decode_tokens: int
    num_prefill_tokens: int
    token_budget: int
    max_num_seqs: int
    admitted: tuple[str, ...]
    first_tokens: tuple[str, ...]
    emitted: tuple[str, ...]
    finished: tuple[str, ...]
    preempted: tuple[str, ...]
    running: int
    waiting: int
    kv_blocks_used: int
    kv_blocks_usable: int
    binding_limit: str
    cost: IterationCostParts
    padded_seats: int = 0  # static batching: finished members still holding a seat
    seen_time: float | None = None
    """When its tokens reached their clients: after the API server streamed them (sim.frontend),
    else at `end_time` (None)."""
    spec_drafts: int = 0
    """Speculative decoding: the verifications this iteration's output counted (vLLM's
    num_drafts: a request admitted with one token is padded to a draft too); 0 without."""
    spec_draft_tokens: int = 0
    """The draft tokens they verified (vLLM's num_draft_tokens)."""
    spec_accepted: int = 0
    """Of those, the draft tokens accepted (vLLM's num_accepted_tokens): tokens the iteration
    gave beyond one a request."""

    @property
    def tokens_seen_at(self) -> float:
        """When the iteration's tokens reached their clients."""
        return self.end_time if self.seen_time is None else self.seen_time

    @property
    def duration(self) -> float:
        return self.end_time - self.start_time

    @property
    def num_scheduled_tokens(self) -> int:
        return self.num_decode_tokens + self.num_prefill_tokens


@dataclass(frozen=True, slots=True)
class SeatView:
    """One seat as the UI draws it."""

    state: str  # one of SEAT_STATES
    request_id: str = ""
    progress: float = 0.0  # prefill: share of the prompt computed; decode: share of output
    blocks: int = 0


BATCH_POOL = "batch"
"""The pool `WorkloadSpec.batch_pool_share` mixes into the traffic: batch jobs beside the chat."""

POOL_LABELS = {BATCH_POOL: "jobs"}
"""A pool's name where a face shows it, where its own name is a metric's too: the batch-jobs pool
under the metrics pane's TTFT sat above "batch 59" (the running batch), which read as the same
thing. The metrics pane and step 18's table both name pools with `pool_label`."""


def pool_label(pool: str) -> str:
    """A pool as the learner reads it: "jobs" for the batch-jobs pool, any other by its name."""
    return POOL_LABELS.get(pool, pool)


@dataclass(frozen=True, slots=True)
class PoolView:
    """TTFT and TPOT percentiles of one pool of traffic (chat, batch) over the recent window."""

    pool: str
    completed: int = 0
    """Requests of this pool in the window the percentiles are taken over."""
    ttft_p50: float = 0.0
    ttft_p99: float = 0.0
    tpot_p50: float = 0.0
    tpot_p99: float = 0.0


@dataclass(frozen=True, slots=True)
class MetricsView:
    """Headline numbers over the recent window (the UI shows these)."""

    output_tokens_per_s: float = 0.0
    requests_per_s: float = 0.0
    ttft_p50: float = 0.0
    ttft_p99: float = 0.0
    tpot_p50: float = 0.0
    tpot_p99: float = 0.0
    itl_max: float = 0.0
    e2e_p50: float = 0.0
    mean_running: float = 0.0
    completed: int = 0
    padding_share: float = 0.0
    num_preemptions: int = 0
    pools: tuple[PoolView, ...] = ()
    """Per pool, in name order, over the same recent requests as the percentiles above; empty
    while all traffic is one pool."""


@dataclass(frozen=True, slots=True)
class EngineSnapshot:
    """Live state of the engine after an iteration, for drawing."""

    time: float
    iteration: int
    batching: str
    seats: tuple[SeatView, ...]
    max_num_seqs: int  # the seats (1 for a sequential server, though more seats are drawn)
    queue_len: int
    running: int
    kv_blocks_used: int
    kv_blocks_usable: int
    kv_blocks_by_request: tuple[tuple[str, int], ...]
    last: IterationReport | None
    metrics: MetricsView
    series_throughput: tuple[float, ...] = ()
    series_ttft: tuple[float, ...] = ()
    series_tpot: tuple[float, ...] = ()
    series_itl: tuple[float, ...] = ()
    finished: bool = False  # the workload is exhausted and nothing is left to run
    notices: tuple[str, ...] = field(default=())  # rejections and other things to tell the learner
    block_size: int = 16  # tokens a KV block holds (kv_blocks_* x block_size = tokens)
    async_scheduling: bool = False  # batches are scheduled one engine call ahead of their output
    # Prefix caching: blocks holding a hash (in use or not), and of those the ones nobody holds:
    # free (counted in kv_blocks_usable - kv_blocks_used) but reusable until evicted.
    cached_blocks: int = 0
    evictable_blocks: int = 0
    prefix_caching: bool = False  # the engine's prefix cache is on (enable_prefix_caching, continuous)
    prefix_cache_queries: int = 0  # prompt tokens looked up since the run started (vLLM's counters)
    prefix_cache_hits: int = 0  # of those, tokens found cached (hit rate = hits / queries)
    encoder: bool = False  # an encoder's run (an embedder): each request one pass, no tokens generated
    # Speculative decoding ("" and zeros without): the method, K, and vLLM's spec_decode counters
    # since the run started (drafts, draft tokens, accepted tokens).
    spec_method: str = ""
    spec_k: int = 0
    spec_drafts: int = 0
    spec_draft_tokens: int = 0
    spec_accepted: int = 0


RECENT_GAP_POINTS = 60
"""Series points the "recent" worst gap looks back over: 30 s of simulated time at the live
app's 0.5 s between points."""


def recent_worst_gap(snapshot: EngineSnapshot) -> float:
    """The worst gap between two tokens lately (seconds; 0 when none was measured), one figure
    for every view and activity that shows it: the run's all-time worst would still show a stall
    from before a dial was moved."""
    recent = snapshot.series_itl[-RECENT_GAP_POINTS:]
    return max(recent) if recent else snapshot.metrics.itl_max
