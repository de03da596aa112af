"""What every batching policy hands the engine, and what it gets back."""

from __future__ import annotations

from typing import NamedTuple

from ..kv import BlockPool
from ..request import Request


OUTPUT_FIELDS = ("binding_limit", "num_compact", "compact_context", "padded", "padded_context",
                 "padded_prefill_tokens", "encoder_batch", "encoder_input_len", "wake_at", "compact_finished",
                 "finished", "scheduled", "admitted", "preempted", "sampling", "joined", "spec", "spec_padding",
                 "accepted", "delivered")
"""A `SchedulerOutput`'s fields (its slots)."""


class SchedulerOutput:
    """One batch: who runs, with how many tokens, and why no more ran.

    `scheduled` lists the requests held explicitly as (request, tokens, computed tokens before,
    is a decode) in scheduled order (running first, then admitted); the continuous scheduler's
    compactly held decoders (one token each) are counted in `num_compact` and
    `compact_context` instead.

    Made once an iteration, with slots (every field an instance's own: a default read through
    the class costs several times a slot's read); keyword arguments set fields at once."""

    __slots__ = OUTPUT_FIELDS

    def __init__(self, num_compact: int = 0, compact_context: int = 0, binding_limit: str = "none",
                 **fields) -> None:
        self.binding_limit = binding_limit
        self.num_compact = num_compact  # compactly held decoders, one token each
        self.compact_context = compact_context  # the KV tokens their attention reads
        self.padded = 0  # seats running a token that nobody will read (static batching)
        self.padded_context = 0  # KV tokens those padded seats still read
        self.padded_prefill_tokens = 0  # prompt padding when a batch prefills to its longest prompt
        self.encoder_batch = 0  # dynamic batching of an encoder: inputs in this forward pass
        self.encoder_input_len = 0  # tokens per input in that pass (padded to the longest)
        self.wake_at: float | None = None  # nothing to run until this time (dynamic batching's wait)
        # Set when the batch's output is processed (continuous batching):
        # (admission number, request; the number inf for a request preempted with its token in flight)
        self.compact_finished: list[tuple[int, Request]] | tuple = ()
        self.finished: list[tuple[float, Request]] | tuple = ()
        self.scheduled: list[tuple[Request, int, int, bool]] = []
        self.admitted: list[Request] = []
        self.preempted: list[Request] = []
        self.sampling: list[Request] = []  # of `scheduled`, those that sample a token
        self.joined: list[Request] = []  # explicit requests that became compact (set when processed)
        # Speculative decoding (None without): the drafts scheduled with each request (those
        # with >= 1), the requests admitted with one token that vLLM pads to 1 + K rows, the
        # drafts the runner accepted for each verifying request, and (set when processed) the
        # tokens appended to each request after a stop trimmed them.
        self.spec: dict[Request, int] | None = None
        self.spec_padding: list[Request] | None = None
        self.accepted: dict[Request, int] | None = None
        self.delivered: dict[Request, int] | None = None
        if fields:
            for name, value in fields.items():
                if name not in OUTPUT_FIELDS:
                    raise TypeError(f"SchedulerOutput has no field {name!r}")
                setattr(self, name, value)

    @property
    def num_scheduled_tokens(self) -> int:
        return self.num_compact + sum(w[1] for w in self.scheduled)

    @property
    def is_empty(self) -> bool:
        return not (self.scheduled or self.num_compact or self.encoder_batch)


class UpdateResult:
    """What processing a batch's output did."""

    __slots__ = ("num_emitted", "first_tokens", "finished", "gaps", "num_running", "num_waiting", "spec")

    def __init__(self, num_emitted: int = 0, finished: list[Request] | None = None) -> None:
        self.num_emitted = num_emitted  # requests that sampled a token
        self.first_tokens: list[Request] = []
        self.finished: list[Request] = [] if finished is None else finished  # in admission order
        self.gaps: list[tuple[float, int]] = []  # (gap since the previous token, requests)
        self.num_running = 0  # requests running once the output is processed
        self.num_waiting = 0  # and those waiting
        # Speculative decoding: what this output added to the scheduler's spec counters (drafts,
        # draft tokens, accepted tokens); None without speculative decoding.
        self.spec: tuple[int, int, int] | None = None


class WorkRow(NamedTuple):
    """One request's share of a batch, as a report lists it (a report lists every request of the
    batch each iteration: a named tuple is made in a third of a frozen dataclass's time)."""

    request_id: str
    num_tokens: int
    is_prefill: bool
    context_len: int  # tokens with KV in the cache once the batch ran
    sampled: bool


class CapsUsed:
    """How near a run came to its seat and token caps (the continuous scheduler's own record,
    kept as it schedules): whether the seats (`max_num_seqs`, or `max_num_active_seqs`) ever
    held a waiting request back, whether the token budget ever cut or held back work (a chunk
    cut to it, a request it left waiting, running requests wanting more than it), the most
    requests ever running, and the most tokens an iteration scheduled or its running requests
    wanted. A run whose cap never bound runs the same under any value of that cap above these
    peaks, if the cap enters nothing else (`sim.config.caps_cover` says when)."""

    __slots__ = ("seats_bound", "budget_bound", "peak_running", "peak_tokens")

    def __init__(self) -> None:
        self.seats_bound = False
        self.budget_bound = False
        self.peak_running = 0
        self.peak_tokens = 0

    def copy(self) -> "CapsUsed":
        other = CapsUsed()
        other.seats_bound, other.budget_bound = self.seats_bound, self.budget_bound
        other.peak_running, other.peak_tokens = self.peak_running, self.peak_tokens
        return other

    def unknown(self) -> None:
        """The dials changed mid-run: the record no longer vouches for either cap."""
        self.seats_bound = self.budget_bound = True


class Scheduler:
    """Shared plumbing: the block pool, the dials and sampling the tokens of a forward pass.

    Subclasses hold the running requests (`running`: a list for static batching, a
    `RunningSet` for continuous batching) and decide who runs (`schedule`). Token times are set
    when a batch's output is processed (`update_from_output(output, start, end)`): a token's time
    is the end of the iteration that sampled it."""

    name = "base"

    def __init__(self, config, pool: BlockPool) -> None:
        self.config = config
        self.pool = pool
        self.now = 0.0  # the engine's clock when it asks for a batch (dynamic batching waits on it)

    # -- queue interface, overridden where the order differs
    def add_request(self, request: Request) -> None:
        raise NotImplementedError

    @property
    def num_waiting(self) -> int:
        raise NotImplementedError

    def has_work(self) -> bool:
        raise NotImplementedError

    def schedule(self) -> SchedulerOutput:
        raise NotImplementedError

    def set_config(self, config) -> None:
        """Take new dials; they apply from the next schedule()."""
        self.config = config

    def sync(self) -> None:
        """Bring every running request's fields up to date (they always are here)."""

    def seated(self) -> list[Request]:
        """The requests holding a seat, in seat order (for the view)."""
        raise NotImplementedError

    def update_from_output(self, output: SchedulerOutput, start: float = 0.0,
                           end: float = 0.0) -> UpdateResult:
        """The batch ran from `start` to `end`: advance computed counts, sample a token for every
        request whose tokens are all computed, and retire those that reached their length."""
        raise NotImplementedError

    def tokens_out(self, output: SchedulerOutput) -> int:
        """How many tokens the batch samples (what `update_from_output` will give out): each
        scheduled request whose tokens it computes all of."""
        return sum(1 for req, n, _, _ in output.scheduled
                   if req.num_computed_tokens + n >= req.prompt_len + req.num_output_tokens)

    def describe(self, output: SchedulerOutput) -> list[WorkRow]:
        """The batch whose output was just processed, in scheduled order (valid until the next
        schedule())."""
        sampled = set(map(id, output.sampling))
        return [WorkRow(req.request_id, n, not decode, before + n, id(req) in sampled)
                for req, n, before, decode in output.scheduled]

    def _sample(self, output: SchedulerOutput, end: float) -> UpdateResult:
        result = UpdateResult()
        max_model_len = self.config.max_model_len
        sampling = output.sampling
        gaps: dict[float, int] = {}
        for req, n, _, _ in output.scheduled:
            computed = req.num_computed_tokens + n
            req.num_computed_tokens = computed
            outputs = req.num_output_tokens
            if computed >= req.prompt_len + outputs:  # all of num_tokens computed
                sampling.append(req)
                gap = record_token(req, end, result.first_tokens)
                if gap is not None:
                    gaps[gap] = gaps.get(gap, 0) + 1
                outputs += 1
                req.num_output_tokens = outputs
                if stops(req, outputs, max_model_len):
                    result.finished.append(req)
        result.num_emitted = len(sampling)
        result.gaps = list(gaps.items())
        return result


def stop_reason(req: Request, outputs: int, max_model_len: int) -> str | None:
    """Why `outputs` tokens end the request, None if they do not: "stop" at its output length,
    "length" at max_model_len (vLLM's check_stop)."""
    if outputs >= req.output_len:
        return "stop"
    if req.prompt_len + outputs >= max_model_len:
        return "length"
    return None


def stops(req: Request, outputs: int, max_model_len: int) -> bool:
    """Whether `outputs` tokens end the request (`stop_reason`), its finish reason set if so."""
    reason = stop_reason(req, outputs, max_model_len)
    if reason is None:
        return False
    req.finish_reason = reason
    return True


def record_token(req: Request, end: float, first_tokens: list[Request]) -> float | None:
    """`req` sampled a token at `end`: its first (listed in `first_tokens`), or one more gap
    between tokens (returned)."""
    last = req.last_token_time
    req.last_token_time = end
    if last is None:
        req.first_token_time = end
        first_tokens.append(req)
        return None
    gap = end - last
    if gap > req.max_gap:
        req.max_gap = gap
    return gap


def is_decode(req: Request, n: int, before: int, in_flight: int = 0) -> bool:
    """`n` tokens from `before` computed are a decode: one token, the last one, of a request that
    has sampled before (`in_flight`: tokens sampled but not yet processed, async scheduling)."""
    outputs = req.num_output_tokens + in_flight
    return n == 1 and outputs > 0 and req.prompt_len + outputs - before == 1


FIRST_DECODE_FIELDS = ("request", "start", "end", "kv_blocks_used", "binding", "batch", "seen", "itl", "output",
                       "cost", "num_running", "num_waiting")
"""What `ContinuousScheduler.async_stretch` gives for the batch it processes in a request's first
decode call, a plain tuple in this order: the request (its first token this batch's), when the batch started and
ended, the blocks used, its binding limit, how many requests sampled in it (the decoders and the
request), when its tokens reached their clients and how long after the ones before (`end` and the
batch's time without the API server): the decoders' gaps are inter-token latencies, the request's
first token is none; then the batch as scheduled (its `SchedulerOutput`) and priced (the engine's
cost tuple), and the requests running and waiting after it, for its report."""

DECODE_STRETCH_FIELDS = ("start", "end", "last_start", "ends", "gaps", "batch", "last_context", "kv_blocks_used",
                         "binding", "finished", "kv_blocks_used_last", "num_running", "num_waiting", "seen", "itl")
"""What `ContinuousScheduler.decode_stretch` (and `async_stretch`) gives for each stretch, a plain
tuple in this order (made tens of thousands of times a sweep): when the first iteration starts, the last ends and the last starts,
when each iteration ended and how long it took (lists or numpy arrays), the batch, the decode context of the last iteration, the blocks used in them (their
peak), the binding limit they repeat; if decoders finished in the last one, those (as (admission
number, request), retired; else ()); the blocks used after it, and the requests running and
waiting then; through the API server (`frontend`), when each iteration's tokens reached their
clients and the gaps between those times (the inter-token latencies the clients measure), else
None and None (the clients see the tokens when sampled: `ends` and `gaps`)."""
