"""A client of Python threads taking turns: one thread a stream, all in one interpreter.

A load generator such as InferenceBench's harness runs C threads in one Python process, each
sending a request (`litellm.completion(stream=True)`) and reading its own stream chunk by chunk,
then sending its next. Python runs one thread at a time (the global interpreter lock), so the
client is one CPU the threads share; what each thread sees, and when, is set by the order they
take it in. `ThreadedClient` is that order:

- Each thread does its own work in order: build and send a request (`sim.frontend` prices it,
  `client_request_s`, the mean: each build's own time is drawn around it from `BUILD_SPREAD`, what
  one call costs against another as measured), then read each chunk of its stream once the chunk
  has arrived (`client_token_s` a chunk).
- A thread holding the lock does its arrived work until it has none (it blocks on its socket and
  releases the lock) or it has read `PER_TURN` chunks in a row and another thread waits: a socket
  read hands the lock on. Building the next request goes on in the turn that read the last chunk
  of the one before (no socket read between them).
- The lock goes to the thread that has waited longest `LONGEST` of the time, otherwise to any
  waiting thread (drawn): CPython hands it to one of the threads waiting on its condition
  variable, and a thread the kernel has just woken from its socket may take it first.

Sources (benchmarks/client_costs.py, LiteLLM 1.84.0's client against a streaming stub, two runs at
16 and 64 threads; docs/accuracy.md, *The client, measured*): a thread reads 1.6-3.6 chunks in a
row at 16 and 64 threads (median 2.1), whatever Python's switch interval (5 ms or 0.5 ms: the
interval does not end the turns); ranked by how long each has waited, the next reader among the
waiting threads is at 0.18-0.23 on average (0 if always the longest waiter, 0.5 if any). The model
replayed on the stub's own schedule (benchmarks/client_turns.py) reads a new request's first
chunk 22 ms after it is written at 16 threads and 106 ms at 64 (measured 24-38 and 112-156 ms).

The client's time runs behind the engine's: a chunk read depends on the chunks of other streams
that arrive before it, so `run(until)` decides only what happens by `until`, when every chunk
arriving by then is known (the caller's clock), and a read's time may lie after it.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from typing import Callable, Iterator

PER_TURN = 2
"""Chunks a thread reads in a row before a waiting thread takes the lock (measured 1.6-3.6 at 16 and
64 threads, median 2.1: benchmarks/client_costs.py's `run`)."""
HANDOVER_RANK = 0.2
"""The next reader's mean rank among the waiting threads by how long each has waited (measured 0.18
and 0.20 at 16 threads, 0.23 and 0.20 at 64: benchmarks/client_costs.py's `next`)."""
LONGEST = 1.0 - 2.0 * HANDOVER_RANK
"""How often the lock goes to the longest waiter, else to any waiting thread: the mix whose mean rank
is HANDOVER_RANK."""


BUILD_SPREAD = ((0.0, 0.65), (0.1, 0.81), (0.2, 0.88), (0.3, 0.91), (0.4, 0.95), (0.5, 0.98), (0.6, 1.01),
                (0.7, 1.06), (0.8, 1.11), (0.9, 1.21), (0.95, 1.28), (0.99, 1.49), (1.0, 2.24))
"""A build's time over the mean, by quantile: the thread's own CPU in `litellm.completion(stream=True)`
until it returns the stream (time.thread_time, so not the time it waits for the lock), over the mean
of its run, pooled over 897 calls at 1, 4, 16 and 64 threads (benchmarks/client_sweep.py, LiteLLM
1.84.0 against client_costs.py's stub, Python 3.11, two shared cores of an Intel Xeon at load 2.9-7.4,
2026-12-06; the mean 3.9-4.9 ms by run). At one thread alone (34 calls) p99 is 1.28. Drawn by
straight lines between the quantiles, whose mean is 1.0005 (divided out: `client_request_s` stays
the mean, as LiteLLM PR 13990's 2.5 ms is: 10,000 calls in 25.1 s)."""


def spread_mean(table) -> float:
    """The mean of a quantile table drawn by straight lines between its rows."""
    return sum((q1 - q0) * (v0 + v1) / 2 for (q0, v0), (q1, v1) in zip(table, table[1:]))


def draw_spread(table, u: float) -> float:
    """The value at quantile `u` (0 <= u < 1) of a quantile table, by straight lines between its rows."""
    for (q0, v0), (q1, v1) in zip(table, table[1:]):
        if u < q1:
            return v0 + (v1 - v0) * (u - q0) / (q1 - q0)
    return table[-1][1]


def build_factors(seed: int, table=BUILD_SPREAD) -> Iterator[float]:
    """Each build's time over the mean, in the order a client of this seed builds: drawn from
    `table`, mean 1 (a stream of its own, so the turns draw as they would without it)."""
    rng = random.Random(f"builds-{seed}")
    mean = spread_mean(table)
    while True:
        yield draw_spread(table, rng.random()) / mean


class ThreadedClient:
    """The threads' work and turns. `add(thread, at, cost, tag)` queues an item for a thread,
    available from `at` (a thread's items in the order they become available); `run(until, done,
    feed)` runs the turns decided by `until`, calling `done(tag, thread, when)` as each item ends
    (it may add work) and `feed(now)` before each decision (it adds the work that arrived by `now`
    from outside and returns when the next such work comes, inf if none)."""

    def __init__(self, per_turn: int = PER_TURN, longest: float = LONGEST, seed: int = 0,
                 spread=BUILD_SPREAD) -> None:
        self.per_turn = per_turn
        self.longest = longest
        self._rng = random.Random(seed)
        self._factors = build_factors(seed, spread) if spread else None
        self.work: list[deque] = []
        self.now = 0.0  # the client's clock: when its next decision is made
        self._ready: deque[int] = deque()  # threads waiting for the lock, longest first
        self._blocked: list[tuple[float, int, int]] = []  # (its next item's time and number, thread)
        self._order = 0
        self._running = -1  # the thread holding the lock
        self._reads = 0  # the chunks it has read in this turn
        self._idle: deque[int] = deque()  # threads with no request, longest idle first

    def thread(self) -> int:
        """A thread for a new request: the one idle longest, or a new one."""
        if self._idle:
            return self._idle.popleft()
        self.work.append(deque())
        return len(self.work) - 1

    def release(self, thread: int) -> None:
        """`thread`'s request is done: it takes the next request to send."""
        self._idle.append(thread)

    def add(self, thread: int, at: float, cost: float, tag) -> None:
        if self._factors is not None and tag[0] == "build":
            cost *= next(self._factors)
        q = self.work[thread]
        self._order += 1
        q.append((at, cost, tag, self._order))
        if len(q) == 1 and thread != self._running:
            heapq.heappush(self._blocked, (at, self._order, thread))

    def next_time(self, feed_at: float) -> float:
        """When the client next decides something, with outside work next arriving at `feed_at`."""
        if self._ready or self._running >= 0:
            return self.now
        t = self._blocked[0][0] if self._blocked else math.inf
        t = t if t < feed_at else feed_at
        return t if t > self.now else self.now

    def _wake(self) -> None:
        blocked = self._blocked
        now = self.now
        while blocked and blocked[0][0] <= now:
            self._ready.append(heapq.heappop(blocked)[2])

    def _pick(self) -> int:
        ready = self._ready
        if len(ready) > 1 and self.longest < 1.0 and self._rng.random() >= self.longest:
            k = self._rng.randrange(len(ready))
            ready.rotate(-k)
            thread = ready.popleft()
            ready.rotate(k)
            return thread
        return ready.popleft()

    def run(self, until: float, done: Callable, feed: Callable[[float], float]) -> None:
        """Make every decision due by `until` (a turn cut by it goes on at the next call)."""
        work = self.work
        while True:
            feed_at = feed(self.now)
            self._wake()
            thread = self._running
            if thread < 0:
                if not self._ready:
                    t = self._blocked[0][0] if self._blocked else math.inf
                    t = t if t < feed_at else feed_at
                    if t > until or t == math.inf:
                        return
                    if t > self.now:
                        self.now = t
                    continue
                if self.now > until:
                    return
                thread = self._running = self._pick()
                self._reads = 0
            elif self.now > until:
                return
            q = work[thread]
            if q and q[0][0] <= self.now and (self._reads < self.per_turn or q[0][2][0] == "build"
                                               or not self._ready):
                _, cost, tag, _ = q.popleft()
                self.now += cost
                if tag[0] != "build":
                    self._reads += 1
                done(tag, thread, self.now)
                continue
            # The turn ends: the thread blocks on its socket, or a waiting thread takes the lock
            # (those whose work arrived meanwhile wait ahead of this one).
            self._running = -1
            if q:
                if q[0][0] <= self.now:
                    self._ready.append(thread)
                else:  # (threads whose work arrives at once queue in the order it was added)
                    heapq.heappush(self._blocked, (q[0][0], q[0][3], thread))
