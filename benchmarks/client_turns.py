"""The simulator's client of Python threads, replayed against client_costs.py's stub and its measurements.

The InferenceBench harness's client (tests/data/published/inferencebench-h100-c*.json) is C threads
of one Python process, each calling `litellm.completion(stream=True)` and reading its own stream.
benchmarks/client_costs.py measured that client against a stub that streams like an engine. This
file replays the simulator's model of that client (`sim.client.ThreadedClient`: the threads take
turns on the interpreter's lock, a turn of PER_TURN chunks, the lock to the longest waiter LONGEST
of the time, else to any waiting thread) on the stub's own schedule, so that its figures can be set
beside the measured ones with no engine involved:

- each thread builds and sends its request (`build_s` of CPU), then reads each chunk of its stream
  when the chunk has arrived (`token_s` a token's chunk; its first read also takes the role chunk
  and its last the closing chunks, `close_s` between them: the rest of the measured CPU a request);
- the figures are client_costs.py's medians at 16 and 64 threads on the machine that measured them
  (2026-12-06, docs/accuracy.md's *The client, measured*): 4.9 ms of CPU a request, 0.57 ms a token;
  2.5 ms of the request's is its build before it is sent (LiteLLM PR 13990's 2.5 ms, measured 2.3 ms
  from the call to the stub's read at one thread).

`replay` runs C such threads against the stub's schedule (a token to every open stream every
6 ms, the first on the first tick after the request is read) and returns a run and a stub log in
client_costs.py's own form, so `client_costs.analyse` reads both the same way.

    python benchmarks/client_turns.py [--threads 1,4,16,64] [--seconds 20]

It prints, per thread count, what client_costs.py prints of the turns (TTFT, the way in and out,
TPOT, every token's wait, the tokens a thread reads in a row, the share of a first token's backlog
read before it, who reads next), for the model (`turns`), for the lock always to the longest
waiter (`longest`) or always to any (`any`), and for one first-come-first-served reader of every
chunk in arrival order (`fcfs`, as one asyncio loop reads). `--tick-ms`, `--way-ms` and
`--first-ticks` stand the stub in for an engine (its step, the way from the send to the engine,
a prefill step before the first token): an estimate with no engine model.
"""

from __future__ import annotations

import argparse
import heapq
import math
import sys
from collections import deque
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.client_costs import TICK_S, analyse  # noqa: E402
from sim.client import HANDOVER_RANK, LONGEST, PER_TURN, ThreadedClient  # noqa: E402

BUILD_S = 0.0025
"""A request's build before it leaves (LiteLLM PR 13990: 2.5 ms; client_costs.py: 2.3 ms at one thread)."""
REQUEST_S = 0.0049
"""The client's CPU a request (client_costs.py, median of its runs at 16 and 64 threads: 4.5-6.3 ms)."""
TOKEN_S = 0.00057
"""The client's CPU a streamed token (client_costs.py, median at 16 and 64 threads: 0.48-0.78 ms)."""


class FirstComeFirstServed:
    """One reader of every chunk in the order they arrive, whatever thread (`sim.frontend`'s client)."""

    def __init__(self) -> None:
        self.work: list[deque] = []
        self.now = 0.0
        self._fifo: list[tuple[float, int, int]] = []
        self._order = 0

    def thread(self) -> int:
        self.work.append(deque())
        return len(self.work) - 1

    def add(self, thread: int, at: float, cost: float, tag) -> None:
        self.work[thread].append((at, cost, tag))
        self._order += 1
        heapq.heappush(self._fifo, (at, self._order, thread))

    def run(self, until: float, done, feed) -> None:
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
    client = ThreadedClient(per_turn, longest) if per_turn else FirstComeFirstServed()
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

    for _ in range(threads):
        start(client.thread(), 0.0)
    client.run(end_at + 30.0, done, lambda now: math.inf)
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
          "waiter; longest: always; any: always any; fcfs: one first-come-first-served reader (as one asyncio "
          f"loop reads); stub tick {a.tick_ms} ms, way in {a.way_ms:g} ms, first token {a.first_ticks} tick(s) after the read; "
          "all in ms, columns as client_costs.py's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
