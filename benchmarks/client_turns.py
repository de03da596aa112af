"""A client of Python threads taking turns, replayed against client_costs.py's stub and its measurements.

The InferenceBench harness's client (tests/data/published/inferencebench-h100-c*.json) is C threads
of one Python process, each calling `litellm.completion(stream=True)` and reading its own stream.
benchmarks/client_costs.py measured that client against a stub that streams like an engine. This
file is the model of that client the simulator would need, replayed on the stub's own schedule,
so that its figures can be set beside the measured ones before any engine is involved:

- The threads share one interpreter: one of them runs at a time (CPython's global interpreter
  lock). Each has its own queue of work in order: building and sending its request
  (`build_s` of CPU), then reading each chunk of its stream when the chunk has arrived (`token_s`
  a token's chunk; its first read also takes the role chunk and its last the closing chunks,
  `close_s` between them: the rest of the measured CPU a request).
- A thread that holds the lock does its arrived work until it has none (it blocks on its socket,
  which releases the lock) or it has done `per_turn` items in a row; the lock then goes to the
  thread that has waited longest for it (CPython hands it to a waiting thread when the holder
  drops it for a socket read, and the operating system picks which; first come first served
  among the waiters is the fair reading of that). A thread whose chunk arrives while another
  holds the lock waits for it from that moment.
- The figures it is given are client_costs.py's medians at 16 and 64 threads on the machine that
  measured them (2026-12-06, the runs in docs/accuracy.md's *The client, measured*): 4.9 ms of CPU
  a request, 0.57 ms a token; 2.5 ms of the request's is its build before it is sent (LiteLLM PR
  13990's 2.5 ms, measured 2.3 ms from the call to the stub's read at one thread); and 2 chunks a
  turn, the median of the measured tokens a thread reads in a row at 16 and 64 threads (1.6-3.6).
  CPython's switch interval (5 ms) does not end the turns: at 0.5 ms the measured turns were the
  same, and a turn of 2 chunks is about 1.1 ms.

`replay` runs C such threads against the stub's schedule (a token to every open stream every
6 ms, the first on the first tick after the request is read) and returns a run and a stub log in
client_costs.py's own form, so `client_costs.analyse` reads both the same way.

    python benchmarks/client_turns.py [--threads 1,4,16,64] [--seconds 10] [--per-turn 2]

It prints, per thread count, what client_costs.py prints of the turns (TTFT, the way out, TPOT,
every token's wait, the tokens a thread reads in a row, the share of a first token's backlog read
before it), beside the same figures for one first-come-first-served reader (`--per-turn 0`: a
thread reads every chunk arrived, in arrival order across threads: the simulator's client today).
"""

from __future__ import annotations

import argparse
import heapq
import sys
from collections import deque
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.client_costs import TICK_S, analyse  # noqa: E402

BUILD_S = 0.0025
"""A request's build before it leaves (LiteLLM PR 13990: 2.5 ms; client_costs.py: 2.3 ms at one thread)."""
REQUEST_S = 0.0049
"""The client's CPU a request (client_costs.py, median of its runs at 16 and 64 threads: 4.5-6.3 ms)."""
TOKEN_S = 0.00057
"""The client's CPU a streamed token (client_costs.py, median at 16 and 64 threads: 0.48-0.78 ms)."""
HANDOVER_RANK = 0.2
"""Who takes the lock when a thread stops reading: the mean rank, by how long each has waited, of the
next reader among the waiting threads (client_costs.py's `next`, two runs each: 0.18 and 0.20 at 16 threads, 0.23 and 0.20 at 64; 0 if
the longest waiter always took it, 0.5 if any did)."""
LONGEST = 1.0 - 2.0 * HANDOVER_RANK
"""How often the lock goes to the longest waiter, the rest of the time to any waiter (drawn): the
mix whose mean rank is HANDOVER_RANK. CPython's lock is handed to one of the threads waiting on its
condition variable, and a thread the kernel has just woken from its socket may take it first."""
PER_TURN = 2
"""Chunks a thread reads in a row before another thread reads one (client_costs.py, median at 16 and
64 threads: 1.6-3.6; at four threads 1.03-1.08, where a thread seldom has two chunks waiting)."""


class ThreadedClient:
    """C threads of one interpreter taking turns on its lock, each doing its own work in order.

    `add(thread, at, cost, tag)` queues work for a thread, available from `at` (a thread's work is
    added in the order it becomes available); `run(until, done)` runs the threads until no work is
    available before `until`, calling `done(tag, thread, when)` as each item ends (it may add work).
    `per_turn` 0: the reader of today's simulator, one queue read first come first served."""

    def __init__(self, threads: int, per_turn: int = PER_TURN, longest: float = 1.0, seed: int = 0) -> None:
        import random

        self._longest = longest
        self._rng = random.Random(seed)
        self.work: list[deque] = [deque() for _ in range(threads)]
        self.per_turn = per_turn
        self.now = 0.0
        self._ready: deque[int] = deque()  # threads waiting for the lock, longest first
        self._blocked: list[tuple[float, int, int]] = []  # (its next work's time, order, thread)
        self._order = 0
        self._running = None  # the thread holding the lock
        self._fifo: list[tuple[float, int, int]] = []  # per_turn 0: every item (available, order, thread)

    def add(self, thread: int, at: float, cost: float, tag) -> None:
        q = self.work[thread]
        q.append((at, cost, tag))
        self._order += 1
        if self.per_turn == 0:
            heapq.heappush(self._fifo, (at, self._order, thread))
        elif len(q) == 1 and thread != self._running:
            heapq.heappush(self._blocked, (at, self._order, thread))

    def _wake(self) -> None:
        """Threads whose next work has arrived by now queue for the lock, in the order it arrived."""
        blocked = self._blocked
        while blocked and blocked[0][0] <= self.now:
            self._ready.append(heapq.heappop(blocked)[2])

    def run(self, until: float, done) -> None:
        if self.per_turn == 0:
            return self._run_fifo(until, done)
        while True:
            self._wake()
            if not self._ready:
                if not self._blocked or self._blocked[0][0] > until:
                    return
                self.now = self._blocked[0][0]
                continue
            if len(self._ready) > 1 and self._longest < 1.0 and self._rng.random() >= self._longest:
                k = self._rng.randrange(len(self._ready))
                self._ready.rotate(-k)
                thread = self._ready.popleft()
                self._ready.rotate(k)
            else:
                thread = self._ready.popleft()
            self._running = thread
            q = self.work[thread]
            reads = 0
            while q and q[0][0] <= self.now:
                if reads >= self.per_turn and q[0][2][0] != "build":
                    self._wake()
                    if self._ready:  # (a socket read: a waiting thread takes the lock)
                        break
                _, cost, tag = q.popleft()
                self.now += cost
                if tag[0] != "build":
                    reads += 1
                done(tag, thread, self.now)
            self._running = None
            self._wake()  # (those whose chunks arrived meanwhile wait ahead of this one)
            if q:
                if q[0][0] <= self.now:
                    self._ready.append(thread)
                else:
                    self._order += 1
                    heapq.heappush(self._blocked, (q[0][0], self._order, thread))

    def _run_fifo(self, until: float, done) -> None:
        fifo = self._fifo
        while fifo and fifo[0][0] <= until:
            at, _, thread = heapq.heappop(fifo)
            _, cost, tag = self.work[thread].popleft()
            self.now = (at if at > self.now else self.now) + cost
            done(tag, thread, self.now)


def replay(threads: int, seconds: float, warmup: float, per_turn: int = PER_TURN, longest: float = LONGEST, tick_s: float = TICK_S,
           max_tokens: int = 128, build_s: float = BUILD_S, request_s: float = REQUEST_S,
           token_s: float = TOKEN_S, way_s: float = 0.0, first_ticks: int = 1) -> tuple[dict, dict]:
    """C threads in a closed loop against the stub's schedule: (run, stub log) as client_costs.py's."""
    client = ThreadedClient(threads, per_turn, longest)
    close_s = request_s - build_s
    records, stub = [], {}
    counter = [0]
    end_at = warmup + seconds

    def start(thread: int, at: float) -> None:
        if at >= end_at:
            return
        counter[0] += 1
        tag = f"r{counter[0]}"
        rec = {"tag": tag, "t0": at, "first": None, "end": None, "seen": [], "thread": thread}
        records.append(rec)
        client.add(thread, at, build_s, ("build", rec, 0))

    def done(item, thread: int, when: float) -> None:
        kind, rec, k = item
        if kind == "build":  # sent: the stub reads it now and writes a token each tick after
            read = when + way_s
            first_tick = (int(read / tick_s) + first_ticks) * tick_s
            writes = [first_tick + i * tick_s for i in range(max_tokens)]
            stub[rec["tag"]] = {"read": read, "writes": writes}
            for i, w in enumerate(writes):
                extra = 0.0 if i else token_s  # (the role chunk comes with the first)
                if i == max_tokens - 1:
                    extra += close_s  # (the finish, usage and [DONE] chunks come with the last)
                client.add(thread, w, token_s + extra, ("token", rec, i))
            return
        if rec["first"] is None:
            rec["first"] = when
        rec["seen"].append((when, k))
        if k == max_tokens - 1:
            rec["end"] = when
            start(thread, when)

    for t in range(threads):
        start(t, 0.0)
    client.run(end_at + 30.0, done)
    run = {"threads": threads, "window": [warmup, end_at], "records": [r for r in records if r["end"] is not None]}
    return run, stub


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="1,4,16,64")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--tick-ms", default=str(TICK_S * 1e3),
                   help="the stub's step, ms; one a thread count (comma-separated) or one for all")
    p.add_argument("--way-ms", type=float, default=0.0, help="from the send to the stub's read, ms (0: the stub's)")
    p.add_argument("--first-ticks", type=int, default=1,
                   help="the ticks after the read that write the first token (1: the stub's; 2: a prefill step first)")
    a = p.parse_args(argv)
    counts = [int(x) for x in a.threads.split(",")]
    ticks = [float(x) / 1e3 for x in a.tick_ms.split(",")]
    ticks = ticks * len(counts) if len(ticks) == 1 else ticks
    readers = (("turns", PER_TURN, LONGEST), ("longest", PER_TURN, 1.0), ("any", PER_TURN, 0.0), ("fcfs", 0, 1.0))
    print(f"{'C':>3} {'reader':>8} {'TTFT p50':>8} {'p99':>6} {'in p50':>6} {'out p50':>7} {'p99':>6} {'TPOT':>6} "
          f"{'lag p50':>7} {'run':>5} {'fifo':>5} {'next':>5}")
    for c, tick in zip(counts, ticks):
        for name, per_turn, longest in readers:
            st = analyse(*replay(c, a.seconds, a.warmup, per_turn, longest, tick, way_s=a.way_ms / 1e3,
                                 first_ticks=a.first_ticks))
            print(f"{c:>3} {name:>8} {st['ttft_p50']:>8.2f} {st['ttft_p99']:>6.1f} {st['in_p50']:>6.2f} "
                  f"{st['out_p50']:>7.2f} {st['out_p99']:>6.1f} {st['tpot_p50']:>6.2f} {st['lag_p50']:>7.1f} "
                  f"{st['run_mean']:>5.2f} {st['fifo_share_p50']:>5.2f} {st['handover_rank']:>5.2f}", flush=True)
    print(f"model: {BUILD_S * 1e3:g} ms build, {REQUEST_S * 1e3:g} ms a request, {TOKEN_S * 1e3:g} ms a token, "
          f"{PER_TURN} chunks a turn; turns: the lock to the longest waiter {LONGEST:.0%} of the time, else to any "
          "waiter; longest: always; any: always any; fcfs: one first-come-first-served reader (the simulator's "
          f"client); stub tick {a.tick_ms} ms, way in {a.way_ms:g} ms, first token {a.first_ticks} tick(s) after the read; "
          "all in ms, columns as client_costs.py's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
