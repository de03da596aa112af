"""The API server in front of the engine: vLLM's frontend process, a serial server.

`vllm serve` runs the engine core in one process and its OpenAI-compatible API server in another:
one asyncio process by default, `--api-server-count N` runs N (`EngineConfig.api_server_count`).
An API server does its work one job at a time, beside the engine core:

- a request's job, when its client sends it: read and check the request, render the chat
  template, build the engine's request and hand it to the engine core; the same job carries the
  request's closing work (the last chunk, the usage, `[DONE]`): `request_s`. Its prompt is
  tokenized on the server's tokenizer thread (vLLM runs the tokenizer on a one-thread executor,
  so a long prompt does not stall the event loop), one prompt after another, `prompt_token_s` a
  token. The engine sees the request when both are done.
- an output job for each engine iteration that sampled tokens, when the engine core sends the
  iteration's outputs: detokenize each new token and stream it to its client as one server-sent
  event, `output_token_s` a token (with speculative decoding a request's accepted tokens of one
  iteration go in one event, priced as one). The tokens reach their clients when the job is
  done: a client's TTFT, ITL, TPOT and E2E count from its send to that moment.

The event loop's jobs are served first come, first served by the time they are ready (a
request's job before an output job ready at the same time), each to the end: an iteration's
outputs are one job (vLLM splits output processing into chunks of 128 requests and lets other
work run between them, PR 12287; not modelled). With N servers a request's job goes to the servers in turn, and an
iteration's tokens are shared evenly among them (requests are spread over the servers): the
tokens reach their clients when the last server is done with its share. Requests reach the engine
in the order they were sent (with N servers one may finish its job before an earlier one's; the
engine reads it after that one: its input stays in order).

The client that sends the requests and reads the streams may have work of its own
(`client_request_s`, `client_token_s`; none by default, the client taken as free, as vllm bench
serve's one asyncio process nearly is): a load generator whose own work is a real share of what it
measures, a Python client whose threads share one interpreter (`threads`, `sim.client`). A thread
builds and sends each request (its clock, TTFT's start, already running) and reads each chunk of
its stream after the API server has streamed it, in its turn on the one core: a client sees a
token when its thread has read it, and a capped client sends its next request then. The engine
queues each iteration's chunks (`stream`), runs the threads to its own clock (`advance`) and
hears of each read (`on_read`).

This is what dissolves the lockstep of capped clients: a wave of requests that finish together
is sent again as its answers reach the clients, and reaches the engine spread over the
frontend's time for the wave's jobs; and at high concurrency the frontend's time per token is a
delay on every token, and a ceiling on throughput when it is the slower of the two processes.

The engine core's own host work for an iteration (scheduling, preparing inputs, sampling,
`overhead_per_seq_s`) is not here: it belongs to the engine's iteration (`sim.cost`). The two
processes run side by side: the frontend never slows the engine's iterations, only what the
clients see and when requests reach the engine.

Between the client and the engine core a request also travels, which takes time but no server's
turn (`transit_s`): the HTTP request over the socket to the server's event loop, and the API
server's message to the engine core process (ZMQ, msgpack) and the engine core's input thread
handing it on. It delays when the engine sees the request, not the servers' other jobs; a constant,
it keeps the requests in order.

Sources for the costs: sim/data/profiles.toml; for the transit, TRANSIT_S below. With every cost 0,
or no API server (an offline run, vLLM's LLM class) the frontend is off (`on`): requests reach the
engine when sent and tokens the client when sampled.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .client import ThreadedClient

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from .arrivals import Arrivals, Chunk
    from .request import Request
    from .workload import RequestSpec


TRANSIT_S = 0.0032
"""The serving path's own latency between a client's send and the engine core holding the request,
beyond the API server's work priced in `FrontendCosts` (seconds): 3.2 ms. Source: Tenstorrent's
tt-inference-server issue 190 (2025-05-08, Llama-3.3-70B, 32 concurrent 128-token prompts) measured
vLLM online against vLLM offline at 235 against 231 ms mean TTFT, +4 ms, and put it on "HTTP server +
ZMQ latency"; that +4 ms holds the API server's own work this model already prices (0.5 ms a request,
2 us a token for their 138 tokenized tokens, 50 us to stream the first token: 0.8 ms), which leaves
3.2 ms. The same comment calls a further 4 ms between two servers likely noise: the figure is a few
milliseconds, not known to the tenth. No source splits it between the way in and the way out (the
engine core's outputs back over ZMQ, the chunk over HTTP); it is put on the way in, which gives
the same TTFT, E2E and closed-loop pace and leaves ITL and TPOT unchanged."""


@dataclass(frozen=True)
class FrontendCosts:
    """What one API server spends on each job (seconds), and how many servers there are."""

    request_s: float = 0.0
    """A request's own work: parse, checks, chat template, engine request, the closing chunks."""
    prompt_token_s: float = 0.0
    """Tokenizing the prompt, per prompt token."""
    output_token_s: float = 0.0
    """Detokenizing one output token and streaming it as a server-sent event."""
    servers: int = 1
    """API server processes (vLLM's --api-server-count; 0: none, an offline run)."""
    client_request_s: float = 0.0
    """The client's own work on a request before it is sent (building it, the HTTP call)."""
    client_token_s: float = 0.0
    """The client's own work on each streamed token's event (reading and parsing it)."""
    transit_s: float = 0.0
    """The request's way from the client to the engine core outside any server's turn (HTTP, ZMQ)."""

    @property
    def on(self) -> bool:
        return self.servers > 0 and (self.request_s > 0 or self.prompt_token_s > 0 or self.output_token_s > 0
                                     or self.transit_s > 0 or self.client)

    @property
    def client(self) -> bool:
        """Whether the client is a server of its own (it costs something)."""
        return self.client_request_s > 0 or self.client_token_s > 0

    def tokenizing(self, prompt_len: int) -> float:
        """The tokenizer thread's time for a prompt."""
        return self.prompt_token_s * prompt_len


class Frontend:
    """The API servers between the client (`arrivals`, what is sent and when) and the engine:
    their jobs in order, when each sent request reaches the engine (`next_at`, `pop_due`) and
    when each iteration's tokens reach their clients (`output`, `outputs`).

    The engine tells it when an iteration's output is ready (`output`, in time order) and when
    its clock has moved past a time with no output ready before it (`advance`): a request sent
    by then has its job done first. Requests sent later are not yet taken from `arrivals`."""

    def __init__(self, arrivals: Arrivals, costs: FrontendCosts, seed: int = 0) -> None:
        self.arrivals = arrivals
        self.costs = costs
        self.on = costs.on
        self._free = [0.0] * costs.servers  # when each server's event loop finishes the jobs it has
        self._tokenizer = [0.0] * costs.servers  # when each server's tokenizer thread is free
        self._turn = 0  # the server the next request's job goes to
        # The client, when it has work of its own: threads taking turns (sim.client), whose
        # reads the engine hears of through `on_read`.
        self.threads = ThreadedClient(seed=seed) if costs.client and self.on else None
        self.on_read: Callable[[Request, float, bool, float | None, float | None], None] | None = None
        """Called as the client reads a chunk: (request, when, whether it is the request's first, the
        gap since its last chunk (None for none), the request's longest gap if this chunk was its
        last, else None)."""
        self._thread_of: dict[str, int] = {}
        self._last_read: dict[str, float] = {}
        self._longest_gap: dict[str, float] = {}
        self._due: deque[tuple[float, RequestSpec, tuple[Chunk, int] | None]] = deque()  # (reaches the engine, spec, origin)
        self._last_due = 0.0
        self.origin: tuple[Chunk, int] | None = None  # where the request last popped came from (see Arrivals.origin)
        self.last_seen = 0.0
        """When the tokens of the last output job reached their clients."""
        self.taken = 0
        """Requests whose jobs were done (taken in, tokenized), and their prompt tokens."""
        self.taken_tokens = 0
        self.streamed = 0
        """Tokens streamed by the output jobs so far (events: with speculative decoding a
        request's tokens of one iteration count once)."""

    def ceiling(self) -> float:
        """Requests per second these API servers (and the client, when it has work of its own) can
        take in and stream at the mix of requests they served so far, each serial server busy all
        the time: the least over the event loops (`request_s` and `output_token_s` a token
        streamed, per request, shared by the servers), the tokenizer threads and the client
        (inf when off, or before a request). Traffic faster than this queues in front of the
        engine without bound, whatever the engine serves: the API server binds (its per-token
        work at high concurrency, PR 27869). The tokens of an iteration are taken as shared
        evenly among several servers (one takes a token more when they do not divide)."""
        if not self.on or not self.taken:
            return math.inf
        c, n, servers = self.costs, self.taken, len(self._free)
        per_token = self.streamed / n
        works = [(c.request_s + c.output_token_s * per_token) / servers,
                 c.prompt_token_s * self.taken_tokens / n / servers]
        if c.client:
            works.append(c.client_request_s + c.client_token_s * per_token)
        busiest = max(works)
        return 1.0 / busiest if busiest > 0 else math.inf

    # -- requests
    def advance(self, t: float) -> None:
        """Do the jobs of requests sent by `t` (no output is ready before them)."""
        if self.threads is not None:  # (the client's threads decide what is sent by then)
            self.threads.run(t, self._read, self._send)
            return
        arrivals = self.arrivals
        while arrivals.next_at <= t:
            spec = arrivals.pop_due(t)
            if spec is None:
                break
            self._take(spec, arrivals.origin, spec.arrival_time)

    def _take(self, spec: RequestSpec, origin, sent: float) -> None:
        """The API server's job for a request that left its client at `sent`."""
        costs = self.costs
        free = self._free
        tokenizer = self._tokenizer
        k = self._turn
        self._turn = k + 1 if k + 1 < len(free) else 0
        begin = free[k]
        handled = (sent if sent >= begin else begin) + costs.request_s
        free[k] = handled
        begin = tokenizer[k]
        done = (handled if handled >= begin else begin) + costs.tokenizing(spec.prompt_len)
        tokenizer[k] = done
        done += costs.transit_s
        if done < self._last_due:
            done = self._last_due  # (its server was quicker than an earlier request's)
        self._last_due = done
        self._due.append((done, spec, origin))
        self.taken += 1
        self.taken_tokens += spec.prompt_len

    # -- the client's threads
    def _send(self, now: float) -> float:
        """Requests due to be sent by `now` go to a thread each, to build and send; returns when
        the next is due."""
        arrivals = self.arrivals
        threads = self.threads
        assert threads is not None  # (called with a client of threads only)
        while arrivals.next_at <= now:
            spec = arrivals.pop_due(now)
            if spec is None:
                break
            thread = threads.thread()
            self._thread_of[spec.request_id] = thread
            threads.add(thread, spec.arrival_time, self.costs.client_request_s, ("build", spec, arrivals.origin))
        return arrivals.next_at

    def _read(self, tag, thread: int, when: float) -> None:
        kind, what, last = tag
        if kind == "build":  # sent: over to the API server
            self._take(what, last, when)
            return
        rid = what.request_id
        first = False
        gap = None
        if kind == "token":
            before = self._last_read.get(rid)
            self._last_read[rid] = when
            if before is None:
                first = True
            else:
                gap = when - before
                if gap > self._longest_gap.get(rid, 0.0):
                    self._longest_gap[rid] = gap
        longest = None
        if last:
            longest = self._longest_gap.pop(rid, 0.0)
            self._last_read.pop(rid, None)
            threads = self.threads
            assert threads is not None  # (a read is a thread's)
            threads.release(thread)
        on_read = self.on_read
        assert on_read is not None  # (the engine listens to a client of threads)
        on_read(what, when, first, gap, longest)

    def stream(self, seen: float, emitted, finished) -> None:
        """An iteration's chunks reach the client at `seen`: one for each of the `emitted`
        requests still streaming (the last for those `finished`)."""
        threads = self.threads
        assert threads is not None  # (called with a client of threads only)
        cost = self.costs.client_token_s
        thread_of = self._thread_of
        ended = {r.request_id for r in finished}
        for req in emitted:
            rid = req.request_id
            thread = thread_of.get(rid)
            if thread is not None:
                last = rid in ended
                threads.add(thread, seen, cost, ("token", req, last))
                if last:
                    del thread_of[rid]
        for req in finished:  # (one that ended without a token: its stream closes)
            thread = thread_of.pop(req.request_id, None)
            if thread is not None:
                threads.add(thread, seen, 0.0, ("end", req, True))

    @property
    def next_at(self) -> float:
        """When the next request whose job is done reaches the engine (inf if none is)."""
        return self._due[0][0] if self._due else math.inf

    @property
    def next_event(self) -> float:
        """When something next happens here: a request reaches the engine, or one is sent."""
        due = self._due[0][0] if self._due else math.inf
        sent = self.arrivals.next_at
        if self.threads is not None:
            sent = self.threads.next_time(sent)
        return sent if sent < due else due

    def horizon(self) -> float:
        """No request not yet at the engine reaches it before this: the next one whose job is
        done, or the next send plus the least its job and tokenizing can take (its own, on one
        server: the requests after it come later; its own work alone with several, where a later
        one may take a quicker server). Iterations starting before it see no arrival."""
        if self.threads is not None:
            return self.next_event
        due = self._due[0][0] if self._due else math.inf
        sent = self.arrivals.next_at
        if sent < due:
            costs = self.costs
            least = sent + costs.request_s  # (summed in the order `advance` sums)
            if len(self._free) == 1:
                head = self.arrivals.peek()
                assert head is not None  # (one is due: next_at is finite)
                least += costs.tokenizing(head.prompt_len)
            least += costs.transit_s
            if least < due:
                return least
        return due

    def pop_due(self, now: float):
        """The next request that has reached the engine by `now` (its arrival time is when its
        client sent it), or None. Call until None; `origin` says where it came from."""
        due = self._due
        if due and due[0][0] <= now:
            _, spec, self.origin = due.popleft()
            return spec
        return None

    # -- outputs
    def output(self, ready: float, tokens: int) -> float:
        """An iteration's `tokens` are ready at `ready`: requests sent by then first, then their
        output job. Returns when they reach their clients (with a client of threads: when they
        reach the client, whose threads read them later, `stream`)."""
        self.advance(ready)
        seen = self._job(ready, tokens)
        self.last_seen = seen
        return seen

    def _job(self, ready: float, tokens: int) -> float:
        self.streamed += tokens
        free = self._free
        c = self.costs.output_token_s
        if len(free) == 1:
            begin = free[0]
            seen = (ready if ready >= begin else begin) + tokens * c
            free[0] = seen
        else:
            share, extra = divmod(tokens, len(free))
            seen = ready
            for k, begin in enumerate(free):
                n = share + 1 if k < extra else share
                if not n:
                    continue
                done = (ready if ready >= begin else begin) + n * c
                free[k] = done
                if done > seen:
                    seen = done
        return seen

    def _one_by_one(self, ends: list[float], tokens: int, quiet: bool) -> list[float]:
        """`output` for each of `ends` in turn (`quiet`: no request is sent before the last), its
        one-server job written out: the same sums in the same order."""
        if len(self._free) > 1:
            if quiet:
                return [self._job(e, tokens) for e in ends]
            return [self.output(e, tokens) for e in ends]
        free = self._free
        arrivals = self.arrivals
        work = tokens * self.costs.output_token_s
        self.streamed += len(ends) * tokens
        seen: list[float] = []
        # The next send (only `advance` moves it): inf when quiet.
        sent = math.inf if quiet else arrivals.next_at
        begin = free[0]
        for e in ends:
            if sent <= e:
                free[0] = begin
                self.advance(e)
                sent = arrivals.next_at
                begin = free[0]
            begin = (e if e >= begin else begin) + work
            seen.append(begin)
        free[0] = begin
        return seen

    def outputs(self, ends, tokens: int):
        """Output jobs of iterations back to back, ending at `ends` (a list, or a numpy array),
        each with `tokens` tokens: when each one's tokens reach their clients and the gaps
        between them (the first from the last output job before), as a list or an array as
        `ends` is. The same numbers as `output` one at a time."""
        if ends.__class__ is list:
            return self._outputs_of_list(ends, tokens)
        import numpy as np

        before = self.last_seen
        last = float(ends[-1])  # (a Python float: ends is an array)
        free = self._free
        servers = len(free)
        quiet = self.arrivals.next_at > last  # no request is sent before the last is ready
        idle = False
        seen: np.ndarray
        if quiet:
            share, extra = divmod(tokens, servers)
            step = (share + (extra > 0)) * self.costs.output_token_s  # the slowest server's share
            first = float(ends[0])
            # Every server free when each output is ready: each reaches the clients `step` later.
            idle = free[0] <= first if servers == 1 else all(begin <= first for begin in free)
            seen = ends + step
            idle = idle and bool((ends[1:] >= seen[:-1]).all())
            if idle:
                self._streamed_idle(len(ends), tokens, last, float(seen[-1]))
        if not quiet or not idle:
            seen = np.array(self._one_by_one(ends.tolist(), tokens, quiet))
        self.last_seen = float(seen[-1])
        gaps = np.empty(len(seen))
        gaps[0] = seen[0] - before
        np.subtract(seen[1:], seen[:-1], out=gaps[1:])
        return seen, gaps

    def _outputs_of_list(self, ends: list[float], tokens: int) -> tuple[list[float], list[float]]:
        """`outputs` of a list of ends (a short stretch's): one pass over them, typed for the
        compiled core (floats unboxed), the same sums in the same order."""
        before = self.last_seen
        last = ends[-1]
        free = self._free
        servers = len(free)
        seen: list[float] = []
        gaps: list[float] = []
        quiet = self.arrivals.next_at > last  # no request is sent before the last is ready
        idle = False
        if quiet:
            share, extra = divmod(tokens, servers)
            step = (share + (extra > 0)) * self.costs.output_token_s  # the slowest server's share
            first = ends[0]
            # Every server free when each output is ready: each reaches the clients `step` later,
            # if each is ready after the one before reached them.
            idle = free[0] <= first if servers == 1 else all(begin <= first for begin in free)
            if idle:
                previous = before
                for e in ends:
                    if e < previous and seen:
                        idle = False
                        break
                    s = e + step
                    seen.append(s)
                    gaps.append(s - previous)
                    previous = s
            if idle:
                self._streamed_idle(len(ends), tokens, last, seen[-1])
        if not quiet or not idle:
            seen = self._one_by_one(ends, tokens, quiet)
            gaps = []
            previous = before
            for s in seen:
                gaps.append(s - previous)
                previous = s
        self.last_seen = seen[-1]
        return seen, gaps

    def _streamed_idle(self, iterations: int, tokens: int, last: float, last_seen: float) -> None:
        """`outputs`' iterations were streamed each on free servers (`last`: when the last was
        ready, `last_seen`: when it reached its clients)."""
        free = self._free
        servers = len(free)
        self.streamed += iterations * tokens
        if servers == 1:
            free[0] = last_seen
        else:
            share, extra = divmod(tokens, servers)
            for k in range(servers):
                n = share + 1 if k < extra else share
                if n:
                    free[k] = last + n * self.costs.output_token_s
