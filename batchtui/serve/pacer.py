"""One engine for every connection, paced against the wall clock one iteration at a time.

The simulated clock is the engine's own: an iteration that starts at simulated time T is
scheduled only once the wall clock has reached T (scaled by `time_scale`), so every request that
came before T is in the queue when the batch is chosen, as on a real server; its tokens are
handed to their clients when the wall clock reaches the iteration's end. Wall-clock jitter (a
busy machine waking the loop late) delays deliveries but never moves the engine's clock: the
next iteration still starts where the last one ended, and the engine catches up. What jitter
can move is a request's arrival: it is stamped with the scaled wall clock when its handler runs
(and the engine keeps that stamp even when an iteration in flight has taken the clock past it:
`Engine.submit(arrived=True)`).

A `--record` file lists every request served as a trace `batchtui sim --workload` replays:
the same arrivals and lengths, so the simulator's figures for that traffic can be set beside
what the clients measured (lengths only: prompts that shared a prefix replay as unrelated ones).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import math
import time
from collections.abc import Callable

from sim.engine import Engine
from sim.request import FINISHED, check_request
from sim.workload import RequestSpec


MAX_LEAD = 0.002
"""Real seconds: at most this much earlier than its time does the loop ask to wake for a delivery
(an asyncio timer on a busy machine wakes late by about this much)."""


class Stream:
    """One request as its HTTP handler follows it: tokens produced so far (`tokens`), and
    `changed`, set when its first token is out, when `interval` more are, and when it has ended
    (the choices of one HTTP request share one event). `reason` and `stop_reason` are how it ends
    when it runs its whole length (a stop matched in the filler: "stop", else "length")."""

    __slots__ = ("request_id", "prompt_len", "output_len", "request", "tokens", "done", "finish_reason",
                 "cached_tokens", "changed", "last_token_time", "told", "streaming", "interval", "reason",
                 "stop_reason", "max_tokens", "n", "group")

    def __init__(self, request_id: str, prompt_len: int, output_len: int, streaming: bool = True,
                 changed: asyncio.Event | None = None, interval: int = 1, reason: str = "length",
                 stop_reason=None, max_tokens: int | None = None, n: int = 1, group=None) -> None:
        self.request_id = request_id
        self.streaming = streaming  # its handler streams the tokens (else it waits for the end)
        self.prompt_len = prompt_len
        self.output_len = output_len
        self.request = None  # the engine's Request
        self.tokens = 0
        self.done = False
        self.finish_reason = ""
        self.reason = reason
        self.stop_reason = stop_reason
        self.max_tokens = output_len if max_tokens is None else max_tokens  # (vLLM's max_tokens for it)
        self.n = n  # its prompt's choices (vLLM's n; the request_params_n histogram)
        self.group = group if group is not None else request_id  # what its prompt's choices share
        self.cached_tokens = 0
        self.changed = changed if changed is not None else asyncio.Event()
        self.interval = interval
        self.told = 0  # tokens its handler has been told of
        self.last_token_time = 0.0


class Recorder:
    """The trace of the requests served, one JSON line each, written to `path` + ".part" and
    renamed into place when closed (an existing file is replaced only then)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.part = path + ".part"
        self.file = open(self.part, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self.first: float | None = None

    def add(self, arrival: float, prompt_len: int, output_len: int) -> None:
        if self.first is None:
            self.first = arrival
        row = {"arrival_time": round(arrival - self.first, 9), "prompt_len": prompt_len, "output_len": output_len}
        self.file.write(json.dumps(row) + "\n")
        self.file.flush()

    def close(self) -> None:
        import os

        self.file.close()
        os.replace(self.part, self.path)


class Observer:
    """What a Pacer tells of the requests it serves (`batchtui.serve.prom.ServerMetrics` listens):
    every method is called with the engine's Request, in simulated seconds."""

    def first_token(self, stream: Stream, req) -> None:
        """Its first token is out (its prefill done)."""

    def tokens(self, stream: Stream, req, new: int, gap: float | None) -> None:
        """`new` more tokens came in one iteration, `gap` after its previous ones (None: its first)."""

    def iteration(self, tokens: int) -> None:
        """An iteration ended with outputs: `tokens` prompt tokens computed for the requests whose
        prefill ended in it, plus the tokens it generated."""

    def finished(self, stream: Stream, req) -> None:
        """It ended, its whole length run."""

    def aborted(self, stream: Stream) -> None:
        """Its client went away."""


class Pacer:
    """Runs `engine` on the wall clock (`time_scale` simulated seconds per real second) and
    hands each request's tokens to its Stream; `observer` (an `Observer`) hears of first tokens,
    tokens, iterations and ends."""

    def __init__(self, engine: Engine, time_scale: float = 1.0, clock: Callable[[], float] = time.monotonic,
                 observer: Observer | None = None, recorder: Recorder | None = None,
                 stream_interval: int = 1) -> None:
        self.engine = engine
        # vLLM's --stream-interval: a handler hears of a request's first token at once, then of
        # every `stream_interval` more, and of its end (fewer writes, the same TTFT and latency).
        self.stream_interval = stream_interval
        self.time_scale = time_scale
        self.clock = clock
        self.observer = observer or Observer()
        self.recorder = recorder
        self.wall0 = clock()
        self.sim0 = engine.time
        self.active: dict[str, Stream] = {}
        self.aborted = 0
        self._ids = itertools.count()
        self._wake = asyncio.Event()
        self._stopped = False
        self.iterations = 0
        self.late = 0.0  # the longest a delivery came after its time (real seconds)
        self.lead = 0.0  # how much earlier than a delivery's time the loop asks to wake

    # -- clocks
    def sim_now(self) -> float:
        return self.sim0 + (self.clock() - self.wall0) * self.time_scale

    def wall_at(self, sim_time: float) -> float:
        return self.wall0 + (sim_time - self.sim0) / self.time_scale

    # -- requests
    def check(self, prompt_len: int, output_len: int) -> None:
        """Raise sim's RequestRejected if the engine could never serve this request."""
        e = self.engine
        check_request("request", prompt_len, output_len, e.config, e.pool)

    def submit(self, prompt_len: int, output_len: int, segments=None, streaming: bool = True, *,
               priority: int = 0, **stream_args) -> Stream:
        """Queue a request arriving now (checked with `check` first); `stream_args` are the
        Stream's (`changed`, `interval`, `reason`, `stop_reason`, `max_tokens`, `n`, `group`)."""
        rid = f"r{next(self._ids)}"
        interval = max(self.stream_interval, stream_args.pop("interval", 1))
        stream = Stream(rid, prompt_len, output_len, streaming, interval=interval, **stream_args)
        arrival = max(self.sim_now(), 0.0)
        engine = self.engine
        if segments is not None and not engine.pool.caching:
            segments = None
        engine.submit(RequestSpec(rid, arrival, prompt_len, output_len, priority=priority,
                                  prompt_segments=segments), arrived=True)
        stream.request = engine.requests.get(rid)  # (None until it arrives if the clock is behind)
        self.active[rid] = stream
        if self.recorder is not None:
            self.recorder.add(arrival, prompt_len, output_len)
        self._wake.set()
        return stream

    def abort(self, stream: Stream) -> None:
        """Its client went away: the engine drops it and frees its blocks."""
        if stream.done or stream.finish_reason == "abort":
            return
        if self.engine.abort(stream.request_id):
            self.aborted += 1
            self.observer.aborted(stream)
            self.engine.release(stream.request_id)
            del self.active[stream.request_id]
        # else it has not reached the engine yet (its arrival is still ahead of the engine's
        # clock): it is dropped when it does (see _deliver)
        stream.done = True
        stream.finish_reason = "abort"
        self._wake.set()

    # -- the loop
    def stop(self) -> None:
        """End the loop, and every request still in flight (aborted, its handler woken: the
        server is stopping, and no handler waits for tokens that will not come)."""
        self._stopped = True
        self._wake.set()
        for stream in list(self.active.values()):
            self.abort(stream)
            stream.changed.set()

    async def run(self) -> None:
        engine = self.engine
        while not self._stopped:
            target = self.sim_now()
            if engine.advance_until(target, 1):
                self.iterations += 1
                due = self.wall_at(engine.time)
                delay = due - self.lead - self.clock()
                if delay > 0:
                    await asyncio.sleep(delay)
                    # How late the wake-up came, on average: the next one is asked for that
                    # much earlier, so that deliveries are on time on average.
                    late = self.clock() - (due - self.lead)
                    self.lead = min(MAX_LEAD, max(0.0, self.lead + 0.1 * (late - self.lead)))
                else:
                    self.late = max(self.late, -delay - self.lead)
                self._deliver()
                if delay <= 0:
                    await asyncio.sleep(0)  # let handlers write while catching up
                continue
            if engine.time > target:  # an iteration's end is still ahead of the wall clock
                await asyncio.sleep(self.wall_at(engine.time) - self.clock())
                continue
            nxt = engine.next_event()  # (the next request the engine is to see)
            timeout = None if nxt == math.inf else max(0.0, self.wall_at(nxt) - self.clock())
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                pass

    def _deliver(self) -> None:
        """The iteration just run has ended on the wall clock: hand out its tokens."""
        engine = self.engine
        engine.sync()
        requests = engine.requests
        observer = self.observer
        ended = []
        computed = 0  # this iteration's tokens as vLLM's iteration_tokens_total counts them
        later = []  # streams with more tokens: told after those with their first (a new
        # request's first token is not queued behind a batch's worth of others' writes)
        for stream in self.active.values():
            req = stream.request
            if req is None:
                req = stream.request = requests.get(stream.request_id)
                if req is None:
                    continue
                if stream.finish_reason == "abort":
                    engine.abort(stream.request_id)
                    self.aborted += 1
                    observer.aborted(stream)
                    ended.append(stream)
                    continue
            n = req.num_output_tokens
            if n > stream.tokens:
                new = n - stream.tokens
                first = stream.tokens == 0
                computed += new
                if first:
                    stream.cached_tokens = max(req.num_cached_tokens, 0)
                    computed += stream.prompt_len - stream.cached_tokens
                    observer.first_token(stream, req)
                observer.tokens(stream, req, new, None if first else req.last_token_time - stream.last_token_time)
                stream.tokens = n
                stream.last_token_time = req.last_token_time
                if req.status == FINISHED:
                    stream.done = True
                    # (it ran its whole length: the engine's "stop" is its output length reached)
                    stream.finish_reason = "abort" if req.finish_reason == "abort" else stream.reason
                    ended.append(stream)
                    observer.finished(stream, req)
                if not stream.streaming:  # (its handler waits for the end only)
                    if stream.done:
                        later.append(stream)
                elif first:
                    stream.told = n
                    stream.changed.set()
                elif stream.done or n - stream.told >= stream.interval:
                    stream.told = n
                    later.append(stream)
        if computed:
            observer.iteration(computed)
        for stream in later:
            stream.changed.set()
        for stream in ended:
            del self.active[stream.request_id]
            engine.release(stream.request_id)


def prompt_segments(kind: str, parts, block_size: int, salt: str | None = None):
    """A prompt's identity for the prefix cache, as (name, length) segments: token ids block by
    block (a block is named after every id up to its end, so prompts sharing a head share its
    blocks), a chat message by message (named after every message up to it), a text whole. A
    `salt` (vLLM's cache_salt) goes into every name: only prompts with the same salt share."""
    h = hashlib.blake2b(digest_size=12)
    if salt is not None:
        h.update(b"salt\x00" + salt.encode("utf-8", "surrogatepass") + b"\x00")
    out = []
    if kind == "ids":
        ids = parts
        for start in range(0, len(ids), block_size):
            chunk = ids[start:start + block_size]
            h.update(json.dumps(chunk).encode())
            out.append((h.hexdigest(), len(chunk)))
        return tuple(out)
    for text, length in parts:
        h.update(text.encode("utf-8", "surrogatepass") + b"\x00")
        if length > 0:
            out.append((h.hexdigest(), length))
    return tuple(out)
