"""When requests reach the server.

Three sources, merged in time order: the scenario's workload (all drawn at once when finite,
drawn a chunk at a time when endless), requests submitted by hand for a later time, and the
benchmark client's concurrency cap (`WorkloadSpec.max_concurrency`, vLLM bench's
`--max-concurrency`): with a cap of N the client keeps at most N of the workload's requests in
flight, so a request whose time has come waits at the client until one of them finishes, and
reaches the server then. Its arrival time is that moment (TTFT counts from sending, as vLLM's
benchmark measures it).

Among equal times the workload comes first, then submitted requests in the order given.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING

from .workload import RequestSpec, WorkloadSpec, generate

if TYPE_CHECKING:
    import numpy as np

ENDLESS_CHUNK = 256
"""Requests drawn at a time for an endless workload."""
REFILL_BELOW = 16


class Arrivals:
    """The requests still to arrive, and when the next one does (`next_at`, inf if none is due
    until something happens)."""

    def __init__(self, workload: WorkloadSpec, rng: np.random.Generator) -> None:
        self.workload = workload
        self.rng = rng
        self.endless = workload.num_prompts == 0 and workload.arrival not in ("trace", "all-at-once")
        self.cap = workload.max_concurrency
        self.generated = 0
        self.next_at = math.inf
        self._pending: deque[RequestSpec] = deque()
        self._submitted: list[RequestSpec] = []  # in arrival order (bisect keeps it sorted)
        self._last_arrival = 0.0
        self._in_flight: set[str] = set()  # workload requests sent and not yet finished (cap > 0)
        self._free_slots: deque[float] = deque([0.0] * self.cap)  # when each free slot freed up
        self._refill(force=True)
        self._update_next()

    # -- the workload
    def _refill(self, force: bool = False) -> None:
        spec = self.workload
        if not self.endless:
            if force:
                self._pending = deque(generate(spec, self.rng))
                self.generated = len(self._pending)
            return
        if force or len(self._pending) < REFILL_BELOW:
            n = ENDLESS_CHUNK
            if spec.arrival == "bursts":
                n = spec.burst_size * max(1, -(-ENDLESS_CHUNK // spec.burst_size))
            new = generate(spec, self.rng, n=n, start=self._last_arrival, first_index=self.generated)
            self.generated += len(new)
            if new:
                self._last_arrival = new[-1].arrival_time
            self._pending.extend(new)

    def set_workload(self, workload: WorkloadSpec, now: float) -> None:
        """New traffic for an endless workload from `now` on: arrivals not yet due are drawn
        again with it (a finite workload is rebuilt by the engine instead; the concurrency cap
        restarts the run: it is not changed here)."""
        self.workload = workload
        self._pending.clear()
        self._last_arrival = now
        self._refill(force=True)
        self._update_next()

    @property
    def exhausted(self) -> bool:
        """Nothing more will ever arrive (in flight requests may still finish)."""
        return not self._pending and not self._submitted

    # -- by hand
    def submit(self, spec: RequestSpec) -> None:
        """A request to arrive at its own (future) time."""
        bisect.insort(self._submitted, spec, key=_arrival_key)  # after equal times
        self._update_next()

    # -- the client's cap
    def on_done(self, request_id: str, now: float) -> None:
        """A request finished (or was refused): its slot at the client is free from `now`."""
        if self.cap and request_id in self._in_flight:
            self._in_flight.discard(request_id)
            self._free_slots.append(now)
            self._update_next()

    # -- delivery
    def _update_next(self) -> None:
        t = math.inf
        if self._pending and (not self.cap or self._free_slots):
            t = self._pending[0].arrival_time
            if self.cap:
                t = max(t, self._free_slots[0])
        if self._submitted and self._submitted[0].arrival_time < t:
            t = self._submitted[0].arrival_time
        self.next_at = t

    def pop_due(self, now: float) -> RequestSpec | None:
        """The next request that has arrived by `now`, or None. Call until None."""
        if self.next_at > now:
            return None
        pending = self._pending
        submitted = self._submitted
        spec = None
        if pending and (not self.cap or self._free_slots):
            t = pending[0].arrival_time
            if self.cap:
                t = max(t, self._free_slots[0])
            if t <= now and not (submitted and submitted[0].arrival_time < t):
                spec = pending.popleft()
                if self.cap:
                    self._free_slots.popleft()
                    self._in_flight.add(spec.request_id)
                    if t != spec.arrival_time:
                        spec = replace(spec, arrival_time=t)  # sent when a slot freed up
                if len(pending) < REFILL_BELOW:
                    self._refill()
        if spec is None and submitted and submitted[0].arrival_time <= now:
            spec = submitted.pop(0)
        self._update_next()
        return spec


def _arrival_key(spec: RequestSpec) -> float:
    return spec.arrival_time
