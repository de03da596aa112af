"""When requests reach the server, and how a queue that grows without bound stays small.

Three sources, merged in time order: the scenario's workload (all drawn at once when finite,
drawn a chunk at a time when endless), requests submitted by hand for a later time, and the
benchmark client's concurrency cap (`WorkloadSpec.max_concurrency`, vLLM bench's
`--max-concurrency`): with a cap of N the client keeps at most N of the workload's requests in
flight, so a request whose time has come waits at the client until one of them finishes, and
reaches the server then. Its arrival time is that moment (TTFT counts from sending, as vLLM's
benchmark measures it).

A conversation's next turn (`WorkloadSpec.turns`) depends on when its answer ends: when a turn
finishes (`on_done`), the next one is made (`workload.next_turn`) and submitted for
`think_time` seconds later. Under a concurrency cap a conversation holds its slot from its first
turn to its last (a client talks through one conversation at a time); a refused turn ends it.

Among equal times the workload comes first, then submitted requests in the order given.

An endless workload is drawn a chunk at a time from the engine's generator, and every chunk is
recorded (`Chunk`: the generator's state before it, its first index, its start time). Under
overload the live engine keeps the requests that arrived and wait as `LazyRun`s instead of
Request objects: a run is where its requests come from in that stream, and they are drawn
again, identically, when they reach the head of the queue. That is the queue's exact compact
form: its memory does not grow with its length.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .errors import ConfigError
from .workload import RequestQueue, RequestSpec, WorkloadSpec, generate, generate_queue, next_turn

if TYPE_CHECKING:
    import numpy as np

    from .request import Request

ENDLESS_CHUNK = 256
"""Requests drawn at a time for an endless workload."""
REFILL_BELOW = 16
SPEC_BLOCK = 256
"""Requests of a finite workload made into RequestSpecs at a time (the rest wait as arrays)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One draw of an endless workload: enough to draw it again, identically."""

    workload: WorkloadSpec
    state: Mapping[str, Any]  # the generator's state before the draw
    first_index: int
    start: float  # the arrival before its first one
    n: int
    segment: int  # the traffic it was drawn with (a new segment for every change of traffic)
    length_seed: int  # what is sent comes from a stream of its own (see workload.generate_queue)
    memo: list = field(default_factory=list, compare=False, repr=False)
    """The draw once made: (its requests, the generator's state after it). A run of waiting
    requests that starts in this chunk reads its requests from here instead of drawing all of
    them again (a queue that empties and refills at every arrival started a run, and a draw of the
    whole chunk, per request)."""

    def draw(self, rng: np.random.Generator) -> list[RequestSpec]:
        """Its requests, their arrival times drawn with `rng` (left in the state after the draw)."""
        if self.memo:
            drawn, after = self.memo[0]
            rng.bit_generator.state = after
            return drawn
        rng.bit_generator.state = self.state
        drawn = generate(self.workload, rng, n=self.n, start=self.start, first_index=self.first_index,
                         length_seed=self.length_seed)
        self.memo.append((drawn, rng.bit_generator.state))
        return drawn

    def following(self, rng: np.random.Generator, drawn: list[RequestSpec]) -> Chunk:
        """The chunk drawn right after this one with the same traffic."""
        return Chunk(self.workload, rng.bit_generator.state, self.first_index + self.n,
                     drawn[-1].arrival_time, self.n, self.segment, self.length_seed)


def is_endless(workload: WorkloadSpec) -> bool:
    """Whether a workload's requests never end: no number of them, and arrivals spread in time
    (a trace ends with its file; all at once with no number is none at all)."""
    return workload.num_prompts == 0 and workload.arrival not in ("trace", "all-at-once")


def refuse_at_once(endless: bool, workload: WorkloadSpec) -> None:
    """ConfigError for an endless live run turned to all-at-once arrivals with no number of
    requests: its stream would go on drawing requests, every one due at the same instant."""
    if endless and workload.arrival == "all-at-once" and not workload.num_prompts:
        raise ConfigError("workload.arrival", workload.arrival, "poisson, constant, bursts or gamma for "
                          "endless traffic ({workload.num_prompts} 0)",
                          "every request of an endless stream would arrive at the same instant")


class Arrivals:
    """The requests still to arrive, and when the next one does (`next_at`, inf if none is due
    until something happens)."""

    @classmethod
    def for_scenario(cls, scenario) -> Arrivals:
        """The arrivals of a scenario's traffic, drawn from a generator seeded by its seed: what
        the engine serves, and what a real client sends (`batchtui bench`)."""
        import numpy as np

        return cls(scenario.workload, np.random.default_rng(scenario.seed))

    def __init__(self, workload: WorkloadSpec, rng: np.random.Generator) -> None:
        self.workload = workload
        self.rng = rng
        self.endless = is_endless(workload)
        self.cap = workload.max_concurrency
        self.generated = 0
        self.next_at = math.inf
        self._next_from_workload = False  # the request due at next_at is the workload's
        self._pending: deque[RequestSpec] = deque()
        # A finite workload's requests not yet in _pending (a RequestQueue: arrays, made into
        # specs a block at a time as _pending runs low), or None.
        self._drawn: RequestQueue | None = None
        self._submitted: list[RequestSpec] = []  # in arrival order (bisect keeps it sorted)
        self._last_arrival = 0.0
        self._in_flight: set[str] = set()  # workload requests sent and not yet finished (cap > 0)
        self._free_slots: deque[float] = deque([0.0] * self.cap)  # when each free slot freed up
        self._chunks: deque[list] = deque()  # [chunk, offset of its next pending request, pending left]
        self._segment = 0
        self.origin: tuple[Chunk, int] | None = None  # where the request last popped came from
        self._talking: dict[str, RequestSpec] = {}  # turns sent whose conversation goes on
        # The follow-up turns' lengths come from generators seeded from this (drawn only for
        # conversations, so other workloads draw as before).
        self._turn_seed = int(rng.integers(2**63)) if workload.turns > 1 else 0
        # An endless workload's lengths come from a stream of their own, chunk by chunk (a
        # finite one's are drawn in one go: generate_queue seeds that stream itself).
        self._length_seed = int(rng.integers(2**63)) if self.endless else 0
        self.dataset_prompts: list[str] | None = None
        """A finite workload's dataset prompts (texts), by request index; None without a dataset
        file. What a client that sends the traffic (`batchtui bench`) sends."""
        self._listen(workload)
        self._refill(force=True)
        self._update_next()

    # -- the workload
    def _refill(self, force: bool = False) -> None:
        spec = self.workload
        if not self.endless:
            if force:
                # Arrays made into specs a block at a time: a million requests cost tens of MB.
                drawn = generate_queue(spec, self.rng)
                self.generated = len(drawn)
                self.dataset_prompts = getattr(drawn, "texts", None)
                self._drawn, self._pending = (None, drawn) if isinstance(drawn, deque) else (drawn, deque())
            if self._drawn is not None:
                self._pending.extend(self._drawn.take(SPEC_BLOCK))
                if not self._drawn:
                    self._drawn = None
            return
        if force or len(self._pending) < REFILL_BELOW:
            n = ENDLESS_CHUNK
            if spec.arrival == "bursts":
                n = spec.burst_size * max(1, -(-ENDLESS_CHUNK // spec.burst_size))
            chunk = Chunk(spec, self.rng.bit_generator.state, self.generated, self._last_arrival, n,
                          self._segment, self._length_seed)
            new = chunk.draw(self.rng)
            self.generated += len(new)
            if new:
                self._last_arrival = new[-1].arrival_time
                self._chunks.append([chunk, 0, len(new)])
            self._pending.extend(new)

    def set_workload(self, workload: WorkloadSpec, now: float) -> None:
        """New traffic for an endless workload from `now` on: arrivals not yet due are drawn
        again with it (a finite workload is rebuilt by the engine instead; the concurrency cap
        restarts the run: it is not changed here)."""
        self.workload = workload
        self._listen(workload)
        self._pending.clear()
        self._chunks.clear()
        self._segment += 1
        self._last_arrival = now
        self._refill(force=True)
        self._update_next()

    @property
    def exhausted(self) -> bool:
        """Nothing more will ever arrive (in flight requests may still finish, and a
        conversation's turn in flight may still have a next)."""
        return not self._pending and self._drawn is None and not self._submitted and not self._talking

    # -- by hand
    def submit(self, spec: RequestSpec) -> None:
        """A request to arrive at its own (future) time."""
        bisect.insort(self._submitted, spec, key=_arrival_key)  # after equal times
        self._update_next()

    # -- the client: its cap and its conversations
    def _listen(self, workload: WorkloadSpec) -> None:
        """Set `listens`: whether a finish can matter to the client (`on_done` need not be called
        otherwise): it has a cap, its conversations have turns to send, or turns sent before the
        traffic changed are still pending."""
        self.listens = bool(self.cap) or workload.turns > 1 or bool(self._talking)

    def on_done(self, request_id: str, now: float, served: bool = True, answered: int | None = None) -> None:
        """A request finished (or was refused, not `served`) with `answered` tokens generated:
        its slot at the client is free from `now`, and its conversation's next turn is sent
        `think_time` later."""
        spec = self._talking.pop(request_id, None) if self._talking else None
        follow = None
        if spec is not None and served and spec.turn < self.workload.turns:
            follow = next_turn(self.workload, spec, now + self.workload.think_time, self._turn_seed, answered)
            if follow.turn < self.workload.turns:
                self._talking[follow.request_id] = follow
        if self.cap and request_id in self._in_flight:
            self._in_flight.discard(request_id)
            if follow is not None:
                self._in_flight.add(follow.request_id)  # the conversation keeps its slot
            else:
                self._free_slots.append(now)
                self._update_next()  # a request waiting for a slot may be sent now
        if follow is not None:
            self.submit(follow)

    # -- delivery
    def _update_next(self) -> None:
        """When the next request is due (`next_at`), and whether it is the workload's
        (`_next_from_workload`): the workload's head, once the client has a free slot for it
        (then, if it waited for one, when the slot freed up), unless a submitted request comes
        earlier (among equal times, the workload's first)."""
        t = math.inf
        pending = self._pending
        cap = self.cap
        from_workload = False
        if pending and (not cap or self._free_slots):
            t = pending[0].arrival_time
            if cap:
                t = max(t, self._free_slots[0])
            from_workload = True
        submitted = self._submitted
        if submitted and submitted[0].arrival_time < t:
            t = submitted[0].arrival_time
            from_workload = False
        self.next_at = t
        self._next_from_workload = from_workload

    def peek(self) -> RequestSpec | None:
        """The request due at `next_at`, left in place (None if none is due); its arrival time
        may still be its draw's, not when a freed slot sends it."""
        if self.next_at == math.inf:
            return None
        return self._pending[0] if self._next_from_workload else self._submitted[0]

    def pop_due(self, now: float) -> RequestSpec | None:
        """The next request that has arrived by `now`, or None. Call until None."""
        t = self.next_at
        if t > now:
            return None
        if self._next_from_workload:
            pending = self._pending
            spec = pending.popleft()
            if self.endless:
                mark = self._chunks[0]
                self.origin = (mark[0], mark[1])
                mark[1] += 1
                mark[2] -= 1
                if not mark[2]:
                    self._chunks.popleft()
            if len(pending) < REFILL_BELOW and (self.endless or self._drawn is not None):
                self._refill()
            if self.cap:
                self._free_slots.popleft()
                self._in_flight.add(spec.request_id)
                if t != spec.arrival_time:  # sent when a slot freed up
                    spec = replace(spec, arrival_time=t, client_queue_time=t - spec.arrival_time)
            if spec.conversation and self.workload.turns > 1:
                self._talking[spec.request_id] = spec
        elif self._submitted:
            spec = self._submitted.pop(0)
            self.origin = None
        else:
            return None  # nothing will arrive (asked at an infinite `now`)
        self._update_next()
        return spec


class LazyRun:
    """Requests of an endless workload that arrived one after another and wait, held as where
    they come from in the generator's stream: `len()` of them, the next drawn again (and made a
    Request by `make`) when it reaches the head of the queue. Requests refused on arrival are in
    the stream too; `accept` (the check made then) skips them again."""

    __slots__ = ("segment", "end_index", "queued", "_size", "_chunk", "_offset", "_seq", "_drawn",
                 "_rng", "_head", "_accept", "_make")

    def __init__(self, chunk: Chunk, offset: int, seq: int, accept: Callable[[RequestSpec], bool],
                 make: Callable[[RequestSpec, int], Request]) -> None:
        self.segment = chunk.segment
        self.end_index = chunk.first_index + offset  # the stream index after its last request
        self.queued = False  # in a queue (the queue sets it)
        self._size = 0
        self._chunk = chunk
        self._offset = offset  # where its next request is in the chunk
        self._seq = seq  # the submission number of its next request
        self._drawn: list[RequestSpec] | None = None
        self._rng: np.random.Generator | None = None
        self._head: Request | None = None
        self._accept = accept
        self._make = make

    def __len__(self) -> int:
        return self._size

    def follows(self, origin: tuple[Chunk, int]) -> bool:
        """The request that came from `origin` is the next in this run's stream."""
        chunk, offset = origin
        return chunk.segment == self.segment and chunk.first_index + offset == self.end_index

    def extend(self, accepted: bool) -> None:
        """The next request of the stream arrived (and was refused if not `accepted`)."""
        self.end_index += 1
        self._size += accepted

    def peek(self) -> Request:
        if self._head is None:
            self._head = self._next()
        return self._head

    def pop(self) -> Request:
        request = self.peek()
        self._head = None
        self._size -= 1
        return request

    def requests(self) -> Iterator[Request]:
        """Its requests in order, drawn again without taking them (a view of the queue)."""
        copy = LazyRun(self._chunk, self._offset, self._seq, self._accept, self._make)
        if self._head is not None:
            yield self._head
        for _ in range(self._size - (self._head is not None)):
            yield copy.draw_next()

    def draw_next(self) -> Request:
        """Draw its next request from the stream (the head of a queue calls `peek`)."""
        return self._next()

    def _next(self) -> Request:
        while True:
            drawn = self._drawn
            if drawn is None or self._offset >= len(drawn):
                drawn = self._draw()
            spec = drawn[self._offset]
            self._offset += 1
            if self._accept(spec):
                request = self._make(spec, self._seq)
                self._seq += 1
                return request

    def _draw(self) -> list[RequestSpec]:
        import numpy as np

        rng = self._rng
        if rng is None:
            rng = self._rng = np.random.default_rng()
        if self._drawn is not None:  # this chunk is used up: the next one in the stream
            self._chunk = self._chunk.following(rng, self._drawn)
            self._offset = 0
        drawn = self._drawn = self._chunk.draw(rng)
        return drawn


def _arrival_key(spec: RequestSpec) -> float:
    return spec.arrival_time
